"""configs/deadline/DepthBatch: the Deadline 10 plugin that shows a depthbatch task's progress, run against a
stand-in for Deadline's plugin API (Deadline itself is not installable here): its arguments as Deadline would
pass them, and the Monitor's progress and status from depthbatch's own output lines."""
import importlib.util
import re
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class _Event(list):
    def __iadd__(self, callback):
        self.append(callback)
        return self


class _Handler:
    def __init__(self, regex):
        self.regex = regex
        self.HandleCallback = _Event()


class _FakePlugin:
    """The parts of Deadline.Plugins.DeadlinePlugin the plugin uses; handlers match the whole line, as Deadline's."""

    def __init__(self):
        self.InitializeProcessCallback, self.RenderExecutableCallback = _Event(), _Event()
        self.RenderArgumentCallback, self.StartupDirectoryCallback = _Event(), _Event()
        self.StdoutHandlers, self.progress, self.status, self.info, self.frames = [], [], [], {}, (1, 1)

    def AddStdoutHandlerCallback(self, regex):
        self.StdoutHandlers.append(_Handler(regex))
        return self.StdoutHandlers[-1]

    def GetPluginInfoEntry(self, key):
        return self.info[key]

    def GetPluginInfoEntryWithDefault(self, key, default):
        return self.info.get(key, default)

    def GetStartFrame(self):
        return self.frames[0]

    def GetEndFrame(self):
        return self.frames[1]

    def GetRegexMatch(self, i):
        return self._match.group(i)

    def SetProgress(self, value):
        self.progress.append(value)

    def SetStatusMessage(self, text):
        self.status.append(text)

    def stdout(self, line):
        for h in self.StdoutHandlers:
            self._match = re.fullmatch(h.regex, line)
            if self._match:
                for callback in h.HandleCallback:
                    callback()


def _load_plugin():
    deadline = types.ModuleType("Deadline")
    plugins = types.ModuleType("Deadline.Plugins")
    plugins.DeadlinePlugin = _FakePlugin
    plugins.PluginType = types.SimpleNamespace(Simple="Simple", Advanced="Advanced")
    scripting = types.ModuleType("Deadline.Scripting")
    scripting.RepositoryUtils = types.SimpleNamespace(CheckPathMapping=lambda p: p)
    sys.modules.update({"Deadline": deadline, "Deadline.Plugins": plugins, "Deadline.Scripting": scripting})
    spec = importlib.util.spec_from_file_location("DepthBatch", REPO / "configs/deadline/DepthBatch/DepthBatch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_arguments_are_the_command_line_plugins_with_the_deadline_dialect():
    plugin = _load_plugin().GetDeadlinePlugin()
    plugin.info = {"Executable": "/software/depthbatch/0.3/bin/depthbatch",
                   "Arguments": "<QUOTE>/jobs/shot 010/job.yaml<QUOTE> --range <STARTFRAME>-<ENDFRAME> --skip-existing "
                                "--summary s.<STARTFRAME%6>.json"}
    plugin.frames = (1005, 1007)
    plugin.InitializeProcess()
    assert plugin.PluginType == "Simple" and plugin.StdoutHandling
    assert plugin.RenderExecutable() == "/software/depthbatch/0.3/bin/depthbatch"
    assert plugin.RenderArgument() == ('"/jobs/shot 010/job.yaml" --range 1005-1007 --skip-existing '
                                       "--summary s.001005.json --progress deadline")
    plugin.info["Arguments"] = "job.yaml --progress none"
    assert plugin.RenderArgument() == "job.yaml --progress none", "a --progress the job gave is kept"


def test_depthbatch_lines_move_the_monitors_progress_and_status():
    plugin = _load_plugin().GetDeadlinePlugin()
    plugin.InitializeProcess()
    for line in ["depthbatch: info: 2 frames (1005,1007), 2 worker threads",
                 "frame 1007 rendered 1/2 0.52 s (Progress: 50%)",
                 "frame 1005 failed 2/2: frame 1005: cannot read p.1005.exr (Progress: 100%)",
                 "Progress: 100%"]:   # -q: the deadline dialect's line alone
        plugin.stdout(line)
    assert plugin.progress == [50.0, 100.0, 100.0]
    assert plugin.status == ["frame 1007 rendered (1 of 2)", "frame 1005 failed (2 of 2)"]

