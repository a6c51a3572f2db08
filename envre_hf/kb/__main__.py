"""``python3 -m envre_hf.kb DUMP INDEX``: index (or resume indexing) a Wikidata JSON dump."""

from .wikidata_dump import main

raise SystemExit(main())
