"""pytest's hooks for the end-to-end suites: --select NAME runs the tests whose name holds
NAME (repeatable: any of them), as the scripts' own -k always has, matched against the test's
name only (pytest's -k matches the file's name too)."""


def pytest_addoption(parser):
    parser.addoption("--select", action="append", default=[], metavar="NAME",
                     help="run the tests whose name holds NAME (repeatable: any of them)")


def pytest_collection_modifyitems(config, items):
    names = config.getoption("select")
    if not names:
        return
    chosen, dropped = [], []
    for item in items:
        (chosen if any(n in item.name for n in names) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = chosen
