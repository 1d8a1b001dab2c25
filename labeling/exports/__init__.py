"""ORM → label table DataFrames → files; the one bridge to ``scoring`` (STYLE §1)."""
