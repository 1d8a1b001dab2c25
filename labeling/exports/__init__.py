"""ORM → label table DataFrames → files (STYLE §1): the layer under every area that
reads a run's labels as a table; it imports only the models, ``labeling.db`` and ``scoring``."""
