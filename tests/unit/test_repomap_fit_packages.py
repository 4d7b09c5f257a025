"""bench.repomap_packages's resolution of a bare TypeScript package name, the change it measures:
`@scope/name` is the package folder `name`'s `src/index` file, `@scope/name/sub` its `src/sub`
file, when one file alone answers; a package of node_modules names nothing; core's own
resolution comes back after the block."""

from __future__ import annotations

from bench.repomap_packages import resolving_bare

from tokend.core.repomap.imports import Resolution, path_index

PATHS = [
    "packages/utils/src/index.ts",
    "packages/utils/src/error.ts",
    "packages/utils/src/diff/index.ts",
    "packages/utils/README.ts",  # not under src/
    "packages/runner/src/run.ts",
    "packages/runner/src/local.ts",
    "apps/a/shared/src/index.ts",  # two packages named `shared`: neither is named
    "apps/b/shared/src/index.ts",
]
HERE = "packages/runner/src/run.ts"


def reached(specs: tuple[str, ...]) -> list[str]:
    return Resolution(path_index(PATHS), {HERE: specs}).reached(HERE)


def test_a_package_name_and_its_subpaths_name_files_of_its_src():
    with resolving_bare():
        assert reached(("@vitest/utils",)) == ["packages/utils/src/index.ts"]
        assert reached(("utils",)) == ["packages/utils/src/index.ts"]
        assert reached(("@vitest/utils/error.js",)) == ["packages/utils/src/error.ts"]
        assert reached(("@vitest/utils/diff",)) == ["packages/utils/src/diff/index.ts"]
        assert reached(("./local",)) == ["packages/runner/src/local.ts"]  # relative: core's


def test_node_modules_and_ambiguous_names_name_nothing_and_core_is_left_as_it_was():
    with resolving_bare():
        assert reached(("react", "@types/node", "@acme/shared", "@vitest/utils/none")) == []
    assert reached(("@vitest/utils",)) == []  # core's rule again
