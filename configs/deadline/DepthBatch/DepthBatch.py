"""Deadline 10 plugin for depthbatch: runs one task's frames and shows its progress in the Monitor.

Why: Deadline's stock CommandLine plugin registers a `.*Progress: (\\d+)%.*` handler on the plugin, but starts the
program with RunProcess (unmanaged: the plugin's own comment says its output is not captured) or, with
ShellExecute, through a ShellManagedProcess that has no handler of its own, so a CommandLine task's progress stays
at 0 until it ends. This Simple plugin runs the program itself, so its stdout handlers see every line.

Install: copy this folder (DepthBatch.py, DepthBatch.param) into the Repository's custom/plugins/. It reads the
plugin info keys the CommandLine plugin reads (Executable, Arguments with <STARTFRAME>, <ENDFRAME>,
<STARTFRAME%N>, <ENDFRAME%N>, <QUOTE>; StartupDirectory), so the files `depthbatch submit --engine deadline`
writes work unchanged once the job info says Plugin=DepthBatch. It adds `--progress deadline` to the arguments
(unless they name a --progress), so depthbatch prints one line per frame ending "(Progress: N%)".
"""
import re

from Deadline.Plugins import DeadlinePlugin, PluginType
from Deadline.Scripting import RepositoryUtils

PROGRESS = r".*Progress: (\d+)%.*"   # Deadline matches a handler against the whole line
FRAME = r"frame (-?\d+) (rendered|failed) (\d+)/(\d+)\b.*"


def GetDeadlinePlugin():
    return DepthBatchPlugin()


def CleanupDeadlinePlugin(plugin):
    plugin.Cleanup()


def substitute_frames(arguments, start, end):
    """<STARTFRAME>, <ENDFRAME> (and their %N zero-padded forms) and <QUOTE>, as the CommandLine plugin does."""
    def padded(match, frame):
        width = int(match.group(1))
        return str(frame).zfill(width) if width > 0 else str(frame)
    arguments = re.sub(r"(?i)<STARTFRAME%(\d+)>", lambda m: padded(m, start), arguments)
    arguments = re.sub(r"(?i)<ENDFRAME%(\d+)>", lambda m: padded(m, end), arguments)
    arguments = re.sub(r"(?i)<STARTFRAME>", str(start), arguments)
    arguments = re.sub(r"(?i)<ENDFRAME>", str(end), arguments)
    return re.sub(r"(?i)<QUOTE>", '"', arguments)


class DepthBatchPlugin(DeadlinePlugin):
    def __init__(self):
        super().__init__()
        self.InitializeProcessCallback += self.InitializeProcess
        self.RenderExecutableCallback += self.RenderExecutable
        self.RenderArgumentCallback += self.RenderArgument
        self.StartupDirectoryCallback += self.StartupDirectory

    def Cleanup(self):
        for handler in self.StdoutHandlers:
            del handler.HandleCallback
        del self.InitializeProcessCallback
        del self.RenderExecutableCallback
        del self.RenderArgumentCallback
        del self.StartupDirectoryCallback

    def InitializeProcess(self):
        self.PluginType = PluginType.Simple
        self.SingleFramesOnly = False
        self.StdoutHandling = True
        self.AddStdoutHandlerCallback(PROGRESS).HandleCallback += self.HandleProgress
        self.AddStdoutHandlerCallback(FRAME).HandleCallback += self.HandleFrame

    def RenderExecutable(self):
        return RepositoryUtils.CheckPathMapping(self.GetPluginInfoEntry("Executable").strip())

    def RenderArgument(self):
        arguments = RepositoryUtils.CheckPathMapping(self.GetPluginInfoEntryWithDefault("Arguments", "").strip())
        arguments = substitute_frames(arguments, self.GetStartFrame(), self.GetEndFrame())
        if "--progress" not in arguments:
            arguments += " --progress deadline"
        return arguments

    def StartupDirectory(self):
        return self.GetPluginInfoEntryWithDefault("StartupDirectory", "").strip()

    def HandleProgress(self):
        self.SetProgress(float(self.GetRegexMatch(1)))

    def HandleFrame(self):
        self.SetStatusMessage("frame %s %s (%s of %s)" % (self.GetRegexMatch(1), self.GetRegexMatch(2),
                                                          self.GetRegexMatch(3), self.GetRegexMatch(4)))
