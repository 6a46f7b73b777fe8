"""The language-server front end: LSP in, `kebab.workspace` calls, LSP out.

`server` builds the server and owns its lifecycle; each other module is one feature or one helper
that features share (`notes` resolves `[^kb-n]` footnotes, `text` maps positions, `progress`
streams `$/progress`, `params` validates custom request params).
"""
