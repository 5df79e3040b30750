#! /usr/bin/env perl

exit(5);
