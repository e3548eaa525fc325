"""Root query fields, one module per area, merged into the schema's Query."""
