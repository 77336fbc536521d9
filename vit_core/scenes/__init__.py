"""The generated scene world (`world`: 10 shapes, 9 colours, 6 backgrounds, 5 positions, with
captions and pixel masks), which parts of a composed scene a caption names (`composed`), the
training CLI (`python -m vit_core.scenes.train`) and held-out evaluation
(`python -m vit_core.scenes.evaluate`). `import vit_core` never loads this package."""
