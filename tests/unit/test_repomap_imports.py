"""Which files an import names (core.repomap.imports), on a listing of paths written so each
rule has one right answer and a tempting wrong one."""

from __future__ import annotations

from collections.abc import Iterable

from tokend.core.repomap.imports import PathIndex, Resolution, file_key, path_index, spec_key


def reached(path: str, specs: Iterable[str], index: PathIndex) -> list[str]:
    return Resolution(index, {path: tuple(specs)}).reached(path)


def imported(path: str, specs: Iterable[str], index: PathIndex) -> dict[str, float]:
    return Resolution(index, {path: tuple(specs)}).imported(path)


PATHS = [
    "src/pkg/__init__.py",
    "src/pkg/models.py",
    "src/pkg/sub/__init__.py",
    "src/pkg/sub/tool.py",
    "tests/models.py",  # a top-level module named like pkg's
    "web/app.ts",
    "web/util.ts",
    "web/lib/index.ts",
    "web/lib/core.ts",
    "hugo/resources/page/page.go",
    "hugo/resources/page/site.go",
    "hugo/resources/image.go",
    "hugo/markup/render.go",
]


def test_python_modules_by_package_name_and_relative():
    index = path_index(PATHS)
    here = "src/pkg/sub/tool.py"
    assert reached(here, ("pkg.models",), index) == ["src/pkg/models.py"]
    assert reached(here, ("..models",), index) == ["src/pkg/models.py"]
    assert reached(here, (".",), index) == ["src/pkg/sub/__init__.py"]
    assert reached(here, ("os.path",), index) == []  # not the workspace's
    assert reached(here, ("models",), index) == ["tests/models.py"]  # top-level: no package


def test_a_package_that_re_exports_passes_on_what_it_imports():
    index = path_index(PATHS)
    imports = {"src/pkg/sub/tool.py": ("pkg",), "src/pkg/__init__.py": (".models",)}
    assert Resolution(index, imports).reach("src/pkg/sub/tool.py") == [
        "src/pkg/__init__.py",
        "src/pkg/models.py",
    ]
    assert imported("src/pkg/sub/tool.py", ("pkg",), index) == {"src/pkg/__init__.py": 1.0}


def test_script_specifiers_and_go_paths():
    index = path_index(PATHS)
    assert reached("web/app.ts", ("./util.js", "./lib", "react"), index) == [
        "web/lib/index.ts",
        "web/util.ts",
    ]
    go = reached("hugo/markup/render.go", ("github.com/gohugoio/hugo/resources/page", "fmt"), index)
    assert go == ["hugo/resources/page/page.go", "hugo/resources/page/site.go"]
    shares = imported("hugo/markup/render.go", ("github.com/gohugoio/hugo/resources/page",), index)
    assert shares == {"hugo/resources/page/page.go": 0.5, "hugo/resources/page/site.go": 0.5}
    assert reached("hugo/resources/image.go", (), index) == []  # its package has one file


def test_an_import_and_the_files_it_may_name_share_a_key():
    assert spec_key("web/app.ts", "./lib") == file_key("web/lib/index.ts") == "lib"
    assert spec_key("web/app.ts", "./util.js") == file_key("web/util.ts") == "util"
    assert spec_key("src/pkg/sub/tool.py", "..models") == file_key("src/pkg/models.py")
    assert spec_key("src/pkg/sub/tool.py", ".") == file_key("src/pkg/sub/__init__.py") == "sub"
    assert spec_key("a.go", "github.com/o/r/page") == file_key("x/page/site.go") == "page"
