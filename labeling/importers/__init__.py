"""File → plain dataclasses, no ORM (STYLE §1). One module per format."""
