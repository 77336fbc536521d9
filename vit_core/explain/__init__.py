"""Explanations computed from a trace or from the weights: attention rollout, distance and
entropy (`attention`), W_E components and position similarity (`embeddings`), the logit lens
(`lens`), token statistics and PCA colours (`tokens`), FLOPs and parameters (`flops`),
interventions (`interventions`), caption generation and scoring (`generation`), the
segmentation pivot (`segmentation`), what a head reads and how sure it is (`readout`), the
model map's boxes and live shapes (`stages`), windowed attention's cost (`windows`) and what a
training log and snapshots say (`training`), the numbers each stage's steps say (`*_facts`)
and where a figure's extremes lie for its text alternative (`extremes`), and why an
answer was given: what a map explains (`targets`), taken-away patches (`baselines`), six
attribution maps (`attribution`), whether a map is faithful (`faithfulness`) and where an
answer is formed (`patching`).
Pure torch; no streamlit. Never imports the scene world (vit_core.scenes), which imports this."""
