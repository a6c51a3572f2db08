"""The network layer (docs/reliability.md "Network"): the bounds of every request and our one retry policy
(:mod:`.bounds`), the one ``httpx`` transport, the Hub's client on it and Hub reads retried (:mod:`.client`)."""
