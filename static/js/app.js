// Keyboard shortcuts live here (STYLE §4); pages work without this file.
