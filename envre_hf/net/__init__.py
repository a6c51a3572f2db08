"""The network layer (docs/reliability.md "Network"): every request of the package, to the Hub, Wikidata or an ICL
endpoint, keeps :class:`~.bounds.NetworkBounds` on one ``httpx`` transport (:mod:`.client`); our own requests retry
under one :class:`~.bounds.RetryPolicy`; replies are kept in one SQLite cache (:mod:`.replies`); credentials never
reach a message or a file (:mod:`.redaction`); Hub calls fail as one line (:mod:`.hub_calls`)."""
