// Command reportcorpus writes a fleet of rocectl documents for the fleet
// report's benchmark (bench/report-fleet.sh): N files made from real
// documents, the ones rocectl printed for the shipped hosts
// (report/testdata/corpus, TestCorpus -regen) and any given with -extra
// (the script adds `rocectl audit -o json` of an 8-port ConnectX-6 Dx
// factory host written by mkhosts), each with its host name and time
// changed:
//
//	reportcorpus -n 100000 -o DIR [-templates report/testdata/corpus] [-extra FILE]...
//
// The fleet is racks of 32 hosts, each host an audit document of one of
// the templates (most in sync, some racks with the corpus's cable-length
// drift at one of four values, every fourth rack factory hosts with every setting
// drifted, a few the profile matched no port of, a few failed audits),
// every fifth host also a verify document, every tenth a peer document,
// every 25th a fact cache file instead of its audit file, every 50th
// stale. Mixed in, as issue 39's "Bad input" asks: every 200th file a
// truncated document, every 500th a malformed one, every 150th a copy of
// the document before it (a duplicate). Files go into one directory per
// 1,000 (rack directories, as a results tree has them). It prints the
// counts of each kind of file it wrote.
//
// A program of bench (internal/arch): nothing imports it.
package main
