#!/usr/bin/env python3
"""Self-test of scripts/check-layers.py (run by .ci/run before the check itself): a circle between
files is found through `crate::`, `super::` and `self::` paths and nested use groups, named with
the paths that make it; imports in `#[cfg(test)]` modules and comments do not count; a one-way
chain passes; an upward import between layers fails."""
import importlib.util
import pathlib
import tempfile
import unittest

spec = importlib.util.spec_from_file_location(
    "check_layers", pathlib.Path(__file__).resolve().parent / "check-layers.py"
)
cl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cl)


def tree(files):
    root = pathlib.Path(tempfile.mkdtemp()) / "src"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


class FileCircles(unittest.TestCase):
    def test_two_files_through_super_and_a_nested_group(self):
        src = tree({
            "lib.rs": "pub mod exec;\n",
            "exec/mod.rs": "mod a;\nmod b;\n",
            "exec/a.rs": "use super::{b::{Thing, other as o}};\npub struct A;\n",
            "exec/b.rs": "pub fn f() -> super::a::A { super::a::A }\n",
        })
        bad, _, _ = cl.check(src)
        self.assertEqual(len(bad), 1, bad)
        self.assertTrue(
            bad[0].startswith("import circle between 2 files: src/exec/a.rs, src/exec/b.rs"), bad
        )
        self.assertIn("src/exec/a.rs -> src/exec/b.rs (super::b::Thing)", bad[0])
        self.assertIn("src/exec/b.rs -> src/exec/a.rs (super::a::A)", bad[0])

    def test_three_files_through_crate_self_and_mod_rs(self):
        src = tree({
            "lib.rs": "pub mod store;\n",
            "store/mod.rs": "mod x;\npub use self::x::X;\n",
            "store/x.rs": "use crate::store::y::Y;\npub struct X;\n",
            "store/y.rs": "use crate::store::X;\npub struct Y;\n",
        })
        bad, _, _ = cl.check(src)
        self.assertEqual(len(bad), 1, bad)
        self.assertIn("between 3 files: src/store/mod.rs, src/store/x.rs, src/store/y.rs", bad[0])

    def test_tests_and_comments_do_not_count_and_a_chain_passes(self):
        src = tree({
            "lib.rs": "pub mod exec;\n",
            "exec/mod.rs": "mod a;\nmod b;\npub use a::A;\n",
            "exec/a.rs": "use super::b::B;\npub struct A;\n",
            "exec/b.rs": (
                "// use super::a::A;\npub struct B;\n"
                "#[cfg(test)]\nmod tests {\n    use crate::exec::a::A;\n}\n"
            ),
        })
        bad, units, files = cl.check(src)
        self.assertEqual(bad, [])
        self.assertEqual(files, 1)  # a -> b; mod.rs's `pub use a::A` has no root, not counted

    def test_an_upward_import_between_layers_fails(self):
        src = tree({
            "lib.rs": "pub mod store;\npub mod exec;\n",
            "store/mod.rs": "use crate::exec::Run;\n",
            "exec/mod.rs": "pub struct Run;\n",
        })
        bad, _, _ = cl.check(src)
        self.assertEqual(len(bad), 1, bad)
        self.assertIn("store imports exec, a higher layer", bad[0])


if __name__ == "__main__":
    unittest.main()
