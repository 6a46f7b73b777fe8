"""The ask pipeline and what it writes: retrieval → pack → prompt → generate → cite → persist."""
