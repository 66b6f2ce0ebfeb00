"""The project's SQLite database backend (``ENGINE = "omniroute.db"``)."""
