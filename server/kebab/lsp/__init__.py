"""The language-server front end: LSP in, `kebab.workspace` calls, LSP out.

`server` is the dispatcher: one table names every LSP method and command and the function that
answers it. `core` holds the server object that features work on. Each feature module (`lifecycle`,
`documents`, `ask`, `insert`, `actions`, `navigation`, `symbols`) imports `core` and shared
helpers, never the dispatcher or another feature. The helpers: `folders` and `indexing` keep each
workspace folder's index, `answering` answers a question with its progress, `searching` searches
several folders, `questions` finds a note's questions, `diagnostics` publishes citation
diagnostics, `context` builds what a feature knows of a note, `notes` resolves `[^kb-n]`
footnotes, `hover` renders a cited passage, `text` maps positions, `progress` streams
`$/progress`, `params` validates custom request params and `settings` the client's settings.
"""
