"""``datasets`` builders for DocRED, Re-DocRED and their renamed versions Env-DocRED and Env-Re-DocRED.

``datasets`` 5 no longer runs loading scripts from ``load_dataset``; these builder classes are run directly
(``Builder(data_dir=...).download_and_prepare()``), see ``dataset_scripts/README.md``.
"""
