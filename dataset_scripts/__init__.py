"""``datasets`` builders for DocRED and Re-DocRED in the envre-hf document schema.

``datasets`` 5 no longer runs loading scripts from ``load_dataset``; these builder classes are run directly
(``Builder(data_dir=...).download_and_prepare()``), see ``dataset_scripts/README.md``. The renamed benchmarks
need no builder: ``load_dataset`` reads an ``envre build`` folder (docs/benchmarks.md).
"""
