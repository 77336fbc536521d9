"""Reading what comes from outside: images (`images`), text (`text`), and checkpoints, ours
(`checkpoints`) and other libraries' (`external`). `base` holds what they share (the error types,
ModelInfo and the strict state-dict copy) and imports nothing else of the package."""
