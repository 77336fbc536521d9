"""Presenter mode's guided story: two or three sentences per stage, said to the class."""

NARRATIVE = {
    "overview": "This is one real forward pass of a Vision Transformer on one picture. We will "
                "follow the numbers from the pixels to the answer, one stage per screen.",
    "patches": "A transformer reads a list of vectors, not a picture. So we cut the image into "
               "square patches and unroll every patch into one long row of numbers.",
    "embeddings": "One learned matrix turns every patch row into an embedding. Most ViTs add a "
                  "learned CLS token to the list, and a position vector is added to each token "
                  "so the model knows where it came from.",
    "qkv": "Each token is normalised, then asks a question (query), advertises what it holds "
           "(key), and prepares what it will share (value). Their dot products are the scores.",
    "attention": "Softmax turns scores into weights: where each token looks. Each head has its "
                 "own habit; the page measures how far and how evenly each one looks.",
    "masks": "A mask decides who may look at whom. Text may only read earlier words; the image "
             "patches may read each other in both directions.",
    "mlp": "After the tokens have talked, each one thinks alone: a small two-layer network "
           "widens it, bends it with GELU, and adds the result back.",
    "logits": "The head reads the final tokens (the CLS token, or the mean of the patch "
              "tokens, as this model was built): one linear layer gives a score per class, and "
              "softmax makes them probabilities. A captioner writes word by word.",
    "shapes": "Here is the whole journey as one table: every shape, every parameter, every "
              "multiplication, next to the full-size ViT-B/16.",
    "segmentation": "Keep every patch token, put them back on the grid, and compare or label "
                    "them: the same network's tokens map the picture.",
    "experiments": "Now break it on purpose: switch off heads, hide patches, remove positions. "
                   "What changes tells us what each part was doing.",
}
