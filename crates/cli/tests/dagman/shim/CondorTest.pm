# The part of HTCondor's test library (CondorTest) that the DAGMan test
# drivers (`job_dagman_*.run` in tests/data/dagman) use, written for
# Gleaner's workflow test (tests/dagman/workflows.rs), so that each
# driver runs unchanged and judges the outcome itself:
#
# RunDagTest submits the DAG as HTCondor's library does
# (`condor_submit_dag ARGS -f -notification never FILE > FILE.out`, with
# `$GLEAN dag submit` in place of condor_submit_dag), finds the DAG's
# cluster in that output, and follows the DAG job's events in its user
# log (`FILE.dagman.log`): submit, execute, hold, release, abort and
# termination call the driver's callbacks with the same %info keys, and
# an event the driver registered no callback for fails the test, as in
# HTCondor. Plain `condor_submit` tests (RunTest) and HTCondor's tools
# are not offered: a driver that needs them fails with a message saying
# so.
package CondorTest;

use strict;
use warnings;
use CondorUtils;
use Time::HiRes qw(sleep);
use Exporter 'import';

our @EXPORT = qw(TLOG RegisterResult EndTest runCondorTool);

my %callbacks;
my @results;

sub debug {
    my ($msg, $level) = @_;
    print $msg if $ENV{GLEAN_SHIM_VERBOSE};
}

sub TLOG { print @_; }

sub _register {
    my ($event, $name, $sub) = @_;
    $callbacks{$event} = $sub;
}

sub RegisterExitedSuccess { _register('success', @_) }
sub RegisterExitedFailure { _register('failure', @_) }
sub RegisterExitedAbnormal { _register('abnormal', @_) }
sub RegisterAbort { _register('abort', @_) }
sub RegisterHold { _register('hold', @_) }
sub RegisterRelease { _register('release', @_) }
sub RegisterExecute { _register('execute', @_) }
sub RegisterSubmit { _register('submit', @_) }
sub RegisterEvictedWithoutCheckpoint { _register('evicted', @_) }
sub RegisterEvictedWithRequeue { _register('evicted', @_) }
sub RegisterTimed { return; }
sub LoadExemption { return 1; }

sub RegisterResult {
    my ($result, %args) = @_;
    push @results, $result;
    return $result;
}

sub EndTest {
    my $failed = grep { !$_ } @results;
    exit($failed ? 1 : 0);
}

sub RunTest {
    die "RunTest: this driver submits plain HTCondor jobs (condor_submit), not a DAG\n";
}

sub runCondorTool {
    die "runCondorTool: this driver runs HTCondor's tools (@_)\n";
}

sub _call {
    my ($event, %info) = @_;
    my $cb = $callbacks{$event};
    if (!defined $cb) {
        # Execute and submit are informative; any other event the driver
        # did not ask for is an unexpected outcome.
        return if $event eq 'execute' || $event eq 'submit' || $event eq 'release';
        my $why = defined $info{retval} ? " (returned $info{retval})" : "";
        die "unexpected event: $event$why\n";
    }
    $cb->(%info);
}

# RunDagTest(NAME, DAG, CHECKPOINT, [CLUSTER_CALLBACK,] ARGS)
sub RunDagTest {
    my ($name, $dag, $ckpt, $cluster_cb, $args);
    if (@_ == 5) {
        ($name, $dag, $ckpt, $cluster_cb, $args) = @_;
    } else {
        ($name, $dag, $ckpt, $args) = @_;
    }
    my @files = ref($dag) eq 'ARRAY' ? @$dag : ($dag);
    my $first = $files[0];
    my $glean = $ENV{GLEAN} || 'glean';
    my $cmd = "$glean dag submit $args -f -notification never @files > $first.out 2>&1";
    print "RunDagTest: $cmd\n";
    system($cmd);
    my $cluster = 0;
    if (open(my $out, '<', "$first.out")) {
        while (<$out>) {
            if (/\d+ job\(s\) submitted to cluster (\d+)\./) { $cluster = $1; last; }
        }
        close($out);
    }
    if (!$cluster) {
        my $text = `cat $first.out`;
        print "RunDagTest: the DAG was not submitted:\n$text";
        return 0;
    }
    $cluster_cb->($cluster) if $cluster_cb;
    return _monitor("$first.dagman.log", $cluster);
}

# Follows the DAG job's events in its user log until it ends.
sub _monitor {
    my ($log, $cluster) = @_;
    my $deadline = time() + ($ENV{GLEAN_SHIM_TIMEOUT} || 900);
    my $fh;
    my @pending;
    my $partial = '';
    while (1) {
        if (!$fh) {
            open($fh, '<', $log) or undef $fh;
        }
        my $got = 0;
        if ($fh) {
            while (defined(my $line = <$fh>)) {
                $got = 1;
                $partial .= $line;
                next unless $partial =~ /\n\z/;
                push @pending, $partial;
                $partial = '';
            }
            seek($fh, 0, 1);
        }
        # Events end with a line of three dots.
        while (1) {
            my $end = -1;
            for my $i (0 .. $#pending) {
                if ($pending[$i] =~ /^\.\.\.\s*$/) { $end = $i; last; }
            }
            last if $end < 0;
            my @event = splice(@pending, 0, $end + 1);
            my $done = _event($cluster, @event);
            return 1 if $done;
        }
        die "RunDagTest: the DAG job did not end in time (see $log)\n" if time() > $deadline;
        sleep(0.5) unless $got;
    }
}

# Handles one event; true once the DAG job has left the queue.
sub _event {
    my ($cluster, @lines) = @_;
    my $head = $lines[0];
    return 0 unless $head =~ /^(\d{3}) \((\d+)\.(\d+)\.\d+\)/;
    my ($code, $c, $p) = ($1, $2 + 0, $3 + 0);
    return 0 unless $c == $cluster;
    my %info = (cluster => $c, job => $p);
    if ($code eq '000') { _call('submit', %info); }
    elsif ($code eq '001') { _call('execute', %info); }
    elsif ($code eq '012') { _call('hold', %info); }
    elsif ($code eq '013') { _call('release', %info); }
    elsif ($code eq '004') { _call('evicted', %info); }
    elsif ($code eq '009') { _call('abort', %info); return 1; }
    elsif ($code eq '005') {
        my $how = $lines[1] // '';
        if ($how =~ /\(1\) Normal termination \(return value (\d+)\)/) {
            if ($1 == 0) { _call('success', %info); }
            else { $info{retval} = $1; _call('failure', %info); }
        } elsif ($how =~ /\(0\) Abnormal termination \(signal (\d+)\)/) {
            $info{signal} = $1;
            _call('abnormal', %info);
        } else {
            die "RunDagTest: cannot read the termination event: $how\n";
        }
        return 1;
    }
    return 0;
}

1;
