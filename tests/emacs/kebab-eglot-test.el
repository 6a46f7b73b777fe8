;;; kebab-eglot-test.el --- drive the real eglot against the real `kebab serve' -*- lexical-binding: t -*-

;; Run by tests/emacs/test_emacs_eglot.py as
;;   emacs --batch -l kebab-eglot-test.el
;; with KBTEST_KEBAB (the kebab executable), KBTEST_ROOT (a private vault marked only by an
;; .obsidian folder: no kebab.toml, no .git), KBTEST_INDEX_DIR and KBTEST_OUT set.  It does what
;; a person does in Emacs with the README's configuration: visit a note (eglot starts from
;; `markdown-mode-hook'), see what `M-x eglot-code-actions' offers with point on a word of
;; various lines, pick "Answer with kebab" on a question line, read the hover (eldoc) on the
;; inserted [^kb-1], `M-.' into the cited note in a subfolder (the same server must take it),
;; search the notes with `xref-find-apropos' (workspace/symbol), and see a diagnostic once the
;; cited passage changes.  Everything it saw goes to KBTEST_OUT as JSON; the Python test asserts.
;; A hover is also read as eldoc's echo area shows it in an 80x40 terminal (`kb--echo-area'),
;; on inbox/cited.md too, whose footnote cites a passage of lines far wider than that.
;; Every wait polls with a deadline (`kb--wait'); nothing sleeps blindly.

(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'eglot)
(require 'xref)
(require 'flymake)

(defvar kb--out (getenv "KBTEST_OUT"))
(defvar kb--root (file-name-as-directory (getenv "KBTEST_ROOT")))
(defvar kb--kebab (getenv "KBTEST_KEBAB"))
(defvar kb--index-dir (getenv "KBTEST_INDEX_DIR"))
(defvar kb--question "What time does the nightly backup job run?")
(defvar kb--seen nil "Alist of what was seen, written as JSON at the end.")
(defvar kb--step "start" "The step running now, reported if it fails.")

(defun kb--see (key value)
  (setq kb--seen (cons (cons key value) (assq-delete-all key kb--seen))))

(defun kb--write ()
  (with-temp-file kb--out
    (let ((json-encoding-pretty-print t))
      (insert (json-encode (reverse kb--seen))))))

(defun kb--wait (what seconds predicate)
  "Process events until PREDICATE is non-nil; fail after SECONDS naming WHAT."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (not (setq value (funcall predicate)))
      (when (> (float-time) deadline)
        (error "Timed out after %ss waiting for %s" seconds what))
      (accept-process-output nil 0.05))
    value))

(defun kb--line-text ()
  (buffer-substring-no-properties (line-beginning-position) (line-end-position)))

(defun kb--visible (string)
  "STRING without its invisible parts (the Markdown markup gfm-view-mode hides)."
  (let ((out "") (i 0))
    (while (< i (length string))
      (let ((next (next-single-property-change i 'invisible string (length string))))
        (unless (get-text-property i 'invisible string)
          (setq out (concat out (substring-no-properties string i next))))
        (setq i next)))
    out))

(defun kb--echo-area (doc)
  "The lines eldoc echoes for the hover DOC in an 80x40 terminal, as shown, with their widths.
Emacs 28's eldoc takes as many lines as the echo area may grow to (`max-mini-window-height'
of the frame's 38 lines); Emacs shows a message taller than that, in screen lines, from its
end, so the header stays in sight only if no line is wider than the terminal."
  (let* ((lines (truncate (* 38 max-mini-window-height)))
         (text (if (fboundp 'eldoc--echo-area-substring)
                   (with-current-buffer (eldoc--format-doc-buffer (list (list doc)))
                     (save-excursion (eldoc--echo-area-substring lines)))
                 doc)))
    (mapcar (lambda (line) `((text . ,line) (width . ,(string-width line))))
            (seq-take (split-string (kb--visible text) "\n") lines))))

(defun kb--hover-doc ()
  "What eglot's hover at point gives eldoc."
  ;; What eglot's idle timer does after an edit; batch Emacs is never idle.
  (when eglot--recent-changes (eglot--signal-textDocument/didChange))
  (let (doc)
    (eglot-hover-eldoc-function (lambda (info &rest _) (setq doc (or info ""))))
    (kb--wait "eglot's hover for eldoc" 15 (lambda () doc))
    doc))

(defun kb--uri-path (uri)
  (file-relative-name (eglot--uri-to-path uri) kb--root))

;;; The configuration a user writes (README's Emacs section), with the venv's kebab.

;; Emacs 28 has no markdown-mode of its own: Debian's elpa-markdown-mode (or NonGNU ELPA /
;; MELPA) brings it; without it, the README's two-line stand-in.
(unless (require 'markdown-mode nil t)
  (define-derived-mode markdown-mode text-mode "Markdown")
  (add-to-list 'auto-mode-alist '("\\.md\\'" . markdown-mode)))

;; A vault with neither .git nor kebab.toml: the folder holding .obsidian (or kebab.toml) is the
;; project, so a note in a subfolder joins the same server.  Emacs 29's project.el has
;; `project-vc-extra-root-markers'; Emacs 28's (project 0.8) needs `project-find-functions'.
(require 'project)
(if (boundp 'project-vc-extra-root-markers)
    (setq project-vc-extra-root-markers '(".obsidian" "kebab.toml"))
  (defun kb-project-root (dir)
    (when-let ((root (locate-dominating-file
                      dir (lambda (d) (or (file-exists-p (expand-file-name ".obsidian" d))
                                          (file-exists-p (expand-file-name "kebab.toml" d)))))))
      (cons 'transient root)))
  (add-hook 'project-find-functions #'kb-project-root))

(add-to-list 'eglot-server-programs
             `(markdown-mode . (,kb--kebab "serve"
                                :initializationOptions (:index_dir ,kb--index-dir))))
(add-hook 'markdown-mode-hook #'eglot-ensure)

;;; The session.

(defun kb--status (server)
  (jsonrpc-request server :kebab/status eglot--{} :timeout 10))

(defun kb--ready-p (status)
  (and (equal (plist-get status :state) "ready")
       (cl-every (lambda (f) (equal (plist-get f :pending_vectors) 0))
                 (plist-get status :folders))))

(defun kb--project-dir ()
  "The folder eglot takes as this buffer's project (without one, the buffer's own folder)."
  (let ((project (project-current)))
    (file-relative-name (if project (project-root project) default-directory) kb--root)))

(defun kb--servers ()
  "Every eglot server running now, whichever project started it."
  (cl-loop for servers being the hash-values of eglot--servers-by-project append servers))

(defun kb--offered-at (regexp word)
  "What `M-x eglot-code-actions' offers with point on WORD of the line matching REGEXP.
Nothing is executed: the menu is read, then left.  An alist of title -> the asked question."
  (goto-char (point-min))
  (re-search-forward regexp)
  (beginning-of-line)
  (search-forward word (line-end-position))
  (goto-char (match-beginning 0))
  (kb--offered-here))

(defun kb--offered-here ()
  (let (offered)
    (catch 'kb--menu
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt collection &rest _)
                   (setq offered collection)
                   (throw 'kb--menu nil))))
        (let ((last-nonmenu-event ?\r))  ; a key, not a mouse click: no popup menu
          (condition-case err
              (call-interactively #'eglot-code-actions)
            (error (unless (string-match-p "No code actions here" (error-message-string err))
                     (signal (car err) (cdr err))))))))
    (mapcar (lambda (item)
              (let ((arguments (plist-get (plist-get (cdr item) :command) :arguments)))
                (cons (car item) (and (> (length arguments) 2) (aref arguments 2)))))
            offered)))

(defun kb--run ()
  (setq kb--step "open the note")
  ;; `find-file' sets markdown-mode, whose hook runs `eglot-ensure'.
  (find-file (expand-file-name "inbox/questions.md" kb--root))
  (switch-to-buffer (current-buffer))   ; eldoc answers only for a buffer shown in a window
  (kb--see 'major_mode (symbol-name major-mode))
  (kb--see 'markdown_mode_from (or (locate-library "markdown-mode") "the README's stand-in"))
  (kb--see 'project_root (kb--project-dir))

  (setq kb--step "eglot-ensure")
  ;; `eglot-ensure' connects after the next command; batch mode has no command loop.
  (run-hooks 'post-command-hook)
  (kb--wait "eglot to manage the note" 30
            (lambda () (and (eglot-current-server) eglot--managed-mode)))
  (let ((server (eglot-current-server)))
    (kb--see 'server_name (plist-get (eglot--server-info server) :name))
    (kb--see 'capabilities
             (cl-loop for cap in '(:hoverProvider :definitionProvider :codeActionProvider
                                   :workspaceSymbolProvider :executeCommandProvider)
                      collect (cons cap (if (eglot--server-capable cap) t :json-false))))

    (setq kb--step "wait for the index")
    (let ((start (float-time)) status)
      (kb--wait "kebab/status to be ready with no pending vectors" 45
                (lambda () (setq status (kb--status server))
                  (or (kb--ready-p status) (progn (sleep-for 0.1) nil))))
      (kb--see 'status_state (plist-get status :state))
      (kb--see 'index_wait_s (- (float-time) start)))

    (setq kb--step "what M-x eglot-code-actions offers on a word of each line")
    (let ((note (current-buffer)))
      (with-current-buffer (find-file-noselect (expand-file-name "inbox/weekly.md" kb--root))
        (kb--wait "eglot to manage inbox/weekly.md" 15 (lambda () eglot--managed-mode))
        (kb--see 'offered_on_words
                 (cl-loop for (name regexp word)
                          in '(("korean question" "^매주 백업은" "백업은")
                               ("korean statement" "^매주 월요일" "매주")
                               ("english statement" "^I check" "I")
                               ("heading" "^## Notes" "Notes")
                               ("empty line" "^$" ""))
                          collect (cons name (kb--offered-at regexp word)))))
      (set-buffer note))

    (setq kb--step "code action on the question line")
    (goto-char (point-min))
    (search-forward kb--question)
    (beginning-of-line)
    (kb--see 'question_line (line-number-at-pos))
    (let ((actions (eglot-code-actions (point) nil nil nil)))
      (kb--see 'code_actions
               (mapcar (lambda (a) `((title . ,(plist-get a :title))
                                     (kind . ,(plist-get a :kind))
                                     (command . ,(plist-get (plist-get a :command) :command))))
                       actions)))
    ;; `M-x eglot-code-actions' with point on a word in the middle of the question (eglot sends
    ;; that word's bounds): list, let the person pick by title, execute.  The server answers,
    ;; then asks eglot (workspace/applyEdit) to write the answer into the note.
    (search-forward "nightly" (line-end-position))
    (backward-char 3)
    (let ((picked nil) (confirm nil) (start (float-time)))
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt collection &rest _)
                   (setq picked (mapcar #'car collection))
                   (kb--see 'asked (aref (plist-get (plist-get (cdr (assoc "Answer with kebab"
                                                                           collection))
                                                               :command)
                                                    :arguments)
                                         2))
                   "Answer with kebab"))
                ((symbol-function 'y-or-n-p)
                 (lambda (prompt) (setq confirm prompt) t)))
        (let ((last-nonmenu-event ?\r))  ; a key, not a mouse click: no popup menu
          (call-interactively #'eglot-code-actions)))
      (kb--see 'offered_titles picked)
      (kb--see 'confirm_prompt confirm)
      (kb--see 'answer_s (- (float-time) start)))
    (kb--see 'buffer_after_answer (buffer-substring-no-properties (point-min) (point-max)))

    (setq kb--step "find [^kb-1] and its definition")
    (goto-char (point-min))
    (let (ref-pos)
      (while (and (not ref-pos) (search-forward "[^kb-1]" nil t))
        (unless (looking-at ":")
          (setq ref-pos (match-beginning 0))))
      (kb--see 'reference_line (and ref-pos (progn (goto-char ref-pos) (kb--line-text))))
      (goto-char (point-min))
      (kb--see 'definition_line
               (and (re-search-forward "^\\[\\^kb-1\\]: \\[" nil t) (kb--line-text)))
      (unless ref-pos (error "no [^kb-1] reference in the buffer"))

      (setq kb--step "hover (eldoc) on [^kb-1]")
      (goto-char (+ ref-pos 3))
      (kb--see 'hover_in_eldoc_functions
               (if (memq #'eglot-hover-eldoc-function eldoc-documentation-functions) t :json-false))
      (let ((doc (kb--hover-doc)))
        (kb--see 'eldoc_hover (substring-no-properties doc))
        (kb--see 'eldoc_echo_area (kb--echo-area doc)))

      (setq kb--step "hover (eldoc) on a footnote citing lines wider than the terminal")
      (let ((note (current-buffer)))
        (find-file (expand-file-name "inbox/cited.md" kb--root))
        (switch-to-buffer (current-buffer))
        (run-hooks 'post-command-hook)
        (kb--wait "eglot to manage inbox/cited.md" 15 (lambda () eglot--managed-mode))
        (goto-char (point-min))
        (search-forward "[^kb-1]")
        (goto-char (+ (match-beginning 0) 3))
        (kb--see 'eldoc_echo_area_long (kb--echo-area (kb--hover-doc)))
        (switch-to-buffer note))

      (setq kb--step "no ask action at the end of the footnote definition")
      (goto-char (point-min))
      (re-search-forward "^\\[\\^kb-1\\]: ")
      (end-of-line)
      (kb--see 'offered_at_definition_end (kb--offered-here))

      (setq kb--step "go to definition on [^kb-1]")
      (goto-char (+ ref-pos 3))
      (let* ((id (xref-backend-identifier-at-point 'eglot))
             (defs (xref-backend-definitions 'eglot id)))
        (kb--see 'definitions
                 (mapcar (lambda (x)
                           (let ((loc (xref-item-location x)))
                             `((file . ,(file-relative-name (xref-location-group loc) kb--root))
                               (line . ,(xref-location-line loc)))))
                         defs))
        ;; M-. as a person types it: ops/backup.md opens, markdown-mode-hook runs
        ;; `eglot-ensure' there; the vault's root marker must keep it on this server.
        (setq kb--step "M-. into ops/backup.md")
        (let ((note (current-buffer)))
          (xref-find-definitions id)
          (run-hooks 'post-command-hook)
          (kb--see 'jumped_to (list (file-relative-name buffer-file-name kb--root)
                                    (line-number-at-pos)))
          (kb--wait "eglot to manage the cited note" 15 (lambda () eglot--managed-mode))
          (kb--see 'jumped_project_root (kb--project-dir))
          (kb--see 'jumped_same_server (if (eq (eglot-current-server) server) t :json-false))
          (kb--see 'servers_after_jump (length (kb--servers)))
          (switch-to-buffer note))))

    (setq kb--step "workspace/symbol")
    (let ((start (float-time))
          (items (xref-backend-apropos 'eglot "nightly backup")))
      (kb--see 'apropos_s (- (float-time) start))
      (kb--see 'apropos
               (mapcar (lambda (x)
                         (let ((loc (xref-item-location x)))
                           `((summary . ,(substring-no-properties (xref-item-summary x)))
                             (file . ,(file-relative-name (xref-location-group loc) kb--root))
                             (line . ,(xref-location-line loc)))))
                       items)))
    (kb--see 'symbols
             (mapcar (lambda (s) `((name . ,(plist-get s :name))
                                   (container . ,(plist-get s :containerName))
                                   (file . ,(kb--uri-path
                                             (plist-get (plist-get s :location) :uri)))
                                   (line . ,(1+ (plist-get
                                                 (plist-get (plist-get (plist-get s :location)
                                                                       :range)
                                                            :start)
                                                 :line)))))
                     (jsonrpc-request server :workspace/symbol '(:query "nightly backup"))))

    (setq kb--step "diagnostic after the cited passage changes")
    (let ((note (current-buffer)))
      (with-current-buffer (find-file-noselect (expand-file-name "ops/backup.md" kb--root))
        (kb--wait "eglot to manage ops/backup.md" 15 (lambda () eglot--managed-mode))
        (goto-char (point-min))
        (search-forward "02:30")
        (replace-match "03:15")
        (eglot--signal-textDocument/didChange))
      (with-current-buffer note
        (let (diags)
          (kb--wait "a kebab diagnostic on the note in flymake" 20
                    (lambda () (setq diags (flymake-diagnostics))))
          (kb--see 'diagnostics
                   (mapcar (lambda (d)
                             `((line . ,(line-number-at-pos (flymake-diagnostic-beg d)))
                               (type . ,(symbol-name (flymake-diagnostic-type d)))
                               (text . ,(flymake-diagnostic-text d))))
                           diags)))))

    (setq kb--step "shutdown")
    (eglot-shutdown server)
    (kb--see 'shutdown t)))

(let ((code 0))
  (condition-case err
      (kb--run)
    (error (kb--see 'error (format "%s: %s" kb--step (error-message-string err)))
           (setq code 1)))
  (kb--see 'emacs_version emacs-version)
  (kb--see 'eglot_file (locate-library "eglot"))
  (kb--write)
  (kill-emacs code))

;;; kebab-eglot-test.el ends here
