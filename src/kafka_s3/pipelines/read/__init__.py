"""Reading a backup: discovering its objects and streaming each source partition's records in offset order."""
