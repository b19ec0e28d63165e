"""One package per CMS source: discover, parse, load its tables, build its documents."""
