"""Drawing: plotly figures (pure functions), PIL pictures, the font floor, tables, the app's number
formats, the phone's layout, equations with their words for a screen reader."""
