"""What a student chooses: the image (sample, upload, camera, composed scene), the model and its
card, layer / head / patch, the sidebar that holds them, and the one pass every page starts from."""
