# The part of HTCondor's test library (CondorUtils) that the DAGMan test
# drivers of tests/data/dagman use, written for Gleaner's workflow test
# (tests/dagman/workflows.rs): shell commands, and constants.
package CondorUtils;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(runcmd fullchomp is_windows TRUE FALSE PASS FAIL ANY);

sub TRUE { 1 }
sub FALSE { 0 }
sub PASS { my ($status) = @_; return $status == 0; }
sub FAIL { my ($status) = @_; return $status != 0; }
sub ANY { return 1; }

sub is_windows { return 0; }

sub fullchomp {
    my $changed = 0;
    for (@_) { $changed += s/[\r\n]+\z//; }
    return $changed;
}

sub TimeStr { return scalar localtime(); }

sub print_core_file_info { return; }

# runcmd(COMMAND, {expect_result => \&ANY, ...}): COMMAND through the
# shell; dies if the result is not the expected one (by default, success).
sub runcmd {
    my ($cmd, $options) = @_;
    $options ||= {};
    my $expect = $options->{expect_result} || \&PASS;
    my @out = `$cmd 2>&1`;
    my $status = $?;
    my $code = $status >> 8;
    print "runcmd: $cmd (exit $code)\n" if $ENV{GLEAN_SHIM_VERBOSE};
    if (!$expect->($code)) {
        die "runcmd: \"$cmd\" exited $code: @out\n";
    }
    chomp(@out);
    return { exitcode => $code, signal => $status & 127, success => $code == 0, stdout => \@out, stderr => [] };
}

1;
