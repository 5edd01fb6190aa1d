"""The model works in the notebook: tools that run code in the live kernel (ADR-0114).

`notebook_tools` gives a branch ``run_python``, ``inspect``, ``list_variables`` and
``propose_cell``; ``run_python`` asks before it runs unless told otherwise. The parts: the
risk flags read from code (`risk`), the namespace's names and their diff (`names`), running
code on the kernel's main thread with its outputs captured (`execute`), and the tools.
"""
