"""Sphinx configuration of the pimforge documentation site.

The reference pages (one per unit, one per system model, the command line, the API) are
generated from the code into ``_generated/`` when the build starts (``_ext/pimforge_docs``),
so they cannot drift from it.  The build is offline: no intersphinx, so references to other
projects' objects are not links, and nitpicky mode checks the references into pimforge only.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "pimforge"
author = "the pimforge authors"
copyright = "the pimforge authors"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "pimforge_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = []

html_theme = "furo"
html_title = "pimforge"
html_static_path = []
html_show_sourcelink = False
html_copy_source = False

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Docstrings are numpydoc-style; "Members" lists a dataclass's fields.  It renders like
# "Parameters" but as a plain field list, so it adds no second description of each field.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_custom_sections = [("Members", "params_style")]
napoleon_use_rtype = False

autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "show-inheritance": True,
    "ignore-module-all": True,
}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
add_module_names = False
# Objects stay out of the table of contents: the page headings (one per module) are the
# contents, and furo resolves the whole site's toctree on every page it writes, which with every
# function and attribute in it took half the build.
toc_object_entries = False
python_display_short_literal_types = True

# Every reference must resolve, except to objects of other projects (Python's standard
# library, Amaranth, NumPy, ...) and to the plain type words of docstrings ("int",
# "callable"): without intersphinx there is nothing to link them to.
nitpicky = True
_EXTERNAL = ("builtins|typing|types|collections|abc|dataclasses|enum|pathlib|argparse|json|os|io|"
             "re|subprocess|concurrent|contextlib|functools|itertools|random|threading|logging|"
             "amaranth|numpy|np|cocotb|cocotb_tools|matplotlib|yaml|dask|distributed|pulp|"
             "fusesoc|edalize|softfloatpy|pyvcd|vcd|importlib|inspect|textwrap|shutil|tempfile|"
             "datetime|hashlib|math|fractions|decimal|numbers|multiprocessing|queue|socket|"
             "asyncio|warnings|csv|sys|string|operator|copy|heapq|bisect|statistics|struct|"
             "zlib|gzip|tarfile|zipfile|pickle|time|uuid|weakref|traceback|signal|platform|"
             "urllib|http|email|glob|fnmatch|sqlite3|array|codecs|locale|unittest|pytest")
_TYPE_WORDS = ("int|float|str|bool|bytes|complex|None|NoneType|object|type|callable|Callable|"
               "optional|list|tuple|dict|set|frozenset|iterable|Iterable|Iterator|Sequence|"
               "Mapping|Any|Path|ndarray|array|array_like|mapping|sequence|function|"
               "Module|Signal|Value|Elaboratable|Shape|Const|Component|Signature|Generator|"
               "ArgumentParser|Namespace|Future|Client|Exception|ValueError|TypeError|"
               "RuntimeError|OSError|KeyError|Self|Literal|Union|Optional|Protocol|ClassVar")
nitpick_ignore_regex = [
    (r"py:.*", rf"_?(?:{_EXTERNAL})(?:\..*)?"),
    (r"py:.*", rf"(?:{_TYPE_WORDS})"),
    # a private class in a signature's annotation (``-> _Graph``): private names are not
    # documented on purpose; a docstring's role to one is fixed instead (they are short names)
    (r"py:class", r"pimforge(?:\.\w+)*\._\w+"),
]

pimforge_docs_out = "_generated"
