#! /usr/bin/env perl

exit 4;
