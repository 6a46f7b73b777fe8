"""The ask pipeline and what it writes: gate → pack → prompt → generate → cite → footnotes → persist."""
