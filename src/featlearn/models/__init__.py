"""Small explicit networks: read them top to bottom."""
