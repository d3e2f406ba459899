"""The test suite. Every directory is a package, so that pytest imports each test module by its dotted path
(``tests.unit.core.test_layout``) and two modules of one basename in different directories never clash."""
