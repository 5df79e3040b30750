#! /usr/bin/env perl

sleep 2;
