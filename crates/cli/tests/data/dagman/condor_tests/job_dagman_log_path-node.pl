#! /usr/bin/env perl

sleep(1);
exit(0);
