#!/usr/bin/env tclsh
# Minimal alfscript (Tractor/Alfred job file) validator.
# Evaluates the job file in a *safe* slave interpreter in which only the
# alfscript operators exist (Job, Task, RemoteCmd, Cmd, Instance, Assign,
# Iterate); each is aliased to a checker here.  Prints every command with its
# task path; exits 1 on any error.
# Usage: tclsh alfvalidate.tcl job.alf ?ARGV_FILE?
# With ARGV_FILE, every command's argv is also written there as the bytes a blade would pass: each element
# followed by a NUL byte, each command ended by one more NUL (the file is read and written as UTF-8).
#
# Option names: the common ones from Pixar's "Job Scripting Operators" page;
# unknown options are reported as errors so typos are caught.

set ::errors {}
set ::tasks {}        ;# task titles in definition order
set ::instances {}    ;# {referencing-path title} pairs
set ::ncmds 0
set ::path {}
set ::jobs 0

set ::opts(Job) {-title -subtasks -cleanup -service -envkey -serialsubtasks -comment
    -metadata -priority -projects -tags -afterjids -after -atleast -atmost -crews
    -dirmaps -etalevel -maxactive -postscript -spoolcwd -paused -editpolicy -tier
    -whendone -whenerror -whenalways}
set ::opts(Task) {-title -subtasks -cmds -cleanup -chaser -preview -service
    -serialsubtasks -id -resumeblock -metadata}
set ::opts(Cmd) {-service -tags -atleast -atmost -envkey -id -refersto -expand
    -msg -retryrc -resumewhile -resumepin -metrics -samehost -minrunsecs
    -maxrunsecs -metadata}

proc dget {d k def} { if {[dict exists $d $k]} { return [dict get $d $k] }; return $def }
proc err {msg} { lappend ::errors "[join $::path /]: $msg" }

# Parse "-name value" pairs; returns a dict. Flags errors for unknown names.
proc parseopts {kind allowed arglist} {
    if {[llength $arglist] % 2} { err "$kind: odd number of option words: $arglist"; return {} }
    set d {}
    foreach {k v} $arglist {
        if {$k ni $allowed} { err "$kind: unknown option '$k'" }
        dict set d $k $v
    }
    return $d
}

proc evalbody {slave body} {
    if {[catch {$slave eval $body} msg]} { err "body error: $msg" }
}

proc op_Job {slave args} {
    incr ::jobs
    set o [parseopts Job $::opts(Job) $args]
    if {![dict exists $o -title]} { err "Job without -title" }
    set ::path [list "Job([dget $o -title ?])"]
    puts "JOB title=[list [dget $o -title {}]] serialsubtasks=[dget $o -serialsubtasks 0] service=[list [dget $o -service {}]]"
    if {[dict exists $o -subtasks]} { evalbody $slave [dict get $o -subtasks] }
    if {[dict exists $o -cleanup]}  { evalbody $slave [dict get $o -cleanup] }
}

proc op_Task {slave args} {
    # Task {title} ?options?   or   Task -title {title} ?options?
    if {[llength $args] % 2} { set title [lindex $args 0]; set args [lrange $args 1 end] } else { set title {} }
    set o [parseopts Task $::opts(Task) $args]
    if {$title eq {} && [dict exists $o -title]} { set title [dict get $o -title] }
    if {$title eq {}} { err "Task without title" }
    if {$title in $::tasks} { err "duplicate Task title '$title' (Instance references would be ambiguous)" }
    lappend ::tasks $title
    set saved $::path
    lappend ::path $title
    puts "  TASK [list [join $::path /]] serialsubtasks=[dget $o -serialsubtasks 0]"
    # subtasks (children) run BEFORE this task's own -cmds
    if {[dict exists $o -subtasks]} { evalbody $slave [dict get $o -subtasks] }
    if {[dict exists $o -cmds]}     { evalbody $slave [dict get $o -cmds] }
    if {[dict exists $o -cleanup]}  { evalbody $slave [dict get $o -cleanup] }
    set ::path $saved
}

proc cmdcommon {kind slave launch args} {
    set o [parseopts $kind $::opts(Cmd) $args]
    if {[catch {llength $launch} n] || $n == 0} { err "$kind: empty or malformed launch expression: $launch"; return }
    incr ::ncmds
    if {$::argvout ne {}} {
        foreach word $launch { puts -nonewline $::argvout "$word\0" }
        puts -nonewline $::argvout "\0"
    }
    puts "    [string toupper $kind] argv=[list $launch] service=[list [dget $o -service {}]] task=[list [join $::path /]]"
}
proc op_RemoteCmd {slave launch args} { cmdcommon RemoteCmd $slave $launch {*}$args }
proc op_Cmd       {slave launch args} { cmdcommon Cmd $slave $launch {*}$args }

proc op_Instance {slave title args} {
    lappend ::instances [list [join $::path /] $title]
    puts "    INSTANCE -> [list $title] (from [list [join $::path /]])"
}
proc op_Assign  {slave var value} { $slave eval [list set $var $value] }
proc op_Iterate {slave args} { err "Iterate not supported by this validator" }

if {[llength $argv] < 1 || [llength $argv] > 2} { puts stderr "usage: tclsh alfvalidate.tcl job.alf ?ARGV_FILE?"; exit 2 }
set f [open [lindex $argv 0]]; fconfigure $f -encoding utf-8; set script [read $f]; close $f
set ::argvout {}
if {[llength $argv] == 2} { set ::argvout [open [lindex $argv 1] w]; fconfigure $::argvout -encoding utf-8 -translation lf }

set slave [interp create -safe]
foreach op {Job Task RemoteCmd Cmd Instance Assign Iterate} { interp alias $slave $op {} op_$op $slave }
if {[catch {$slave eval $script} msg]} { lappend ::errors "top level: $msg" }

if {$::jobs != 1} { lappend ::errors "expected exactly one Job, found $::jobs" }
foreach pair $::instances {
    lassign $pair from title
    if {$title ni $::tasks} { lappend ::errors "$from: Instance refers to unknown task '$title'" }
}
puts "SUMMARY tasks=[llength $::tasks] cmds=$::ncmds instances=[llength $::instances] errors=[llength $::errors]"
foreach e $::errors { puts stderr "ERROR: $e" }
if {$::argvout ne {}} { close $::argvout }
exit [expr {[llength $::errors] ? 1 : 0}]
