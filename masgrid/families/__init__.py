"""masgrid's own benchmark families, one folder each. Each folder's `family.py` declares its
`Family` (masgrid/family.py), found through the `masgrid.families` entry-point group like any
third-party family; nothing here registers anything on import."""
