#! /usr/bin/env perl

use CondorTest;
use CondorUtils;

runcmd("cp job_dagman_gt4727-lower-nodeA.cmd.fail job_dagman_gt4727-lower-nodeA.cmd");
