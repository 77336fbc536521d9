"""Presenter mode's guided story: two or three sentences per stage, said to the class."""

NARRATIVE = {
    "overview": "This is one real forward pass of a Vision Transformer on one picture. We will "
                "follow the numbers from the pixels to the answer, one stage per screen.",
    "patches": "A transformer reads a list of vectors, not a picture. So we cut the image into "
               "square patches and unroll every patch into one long row of numbers.",
    "embeddings": "One learned matrix turns every patch row into an embedding. A learned CLS "
                  "token joins the list, and a position vector is added to each token so the "
                  "model knows where it came from.",
    "qkv": "Each token is normalised, then asks a question (query), advertises what it holds "
           "(key), and prepares what it will share (value). Their dot products are the scores.",
    "attention": "Softmax turns scores into weights: where each token looks. Watch the CLS row: "
                 "in a trained model it finds the object.",
    "masks": "A mask decides who may look at whom. Text may only read earlier words; the image "
             "patches may read each other in both directions.",
    "mlp": "After the tokens have talked, each one thinks alone: a small two-layer network "
           "widens it, bends it with GELU, and adds the result back.",
    "logits": "Only the final CLS vector is used for the class: one linear layer gives a score "
              "per class, and softmax makes them probabilities. A captioner writes word by word.",
    "shapes": "Here is the whole journey as one table: every shape, every parameter, every "
              "multiplication, next to the full-size ViT-B/16.",
    "segmentation": "Keep all the patch tokens instead of only CLS, put them back on the grid, "
                    "and label every cell: the same network now segments the picture.",
    "experiments": "Now break it on purpose: switch off heads, hide patches, remove positions. "
                   "What changes tells us what each part was doing.",
}
