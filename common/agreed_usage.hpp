#pragma once
// Bad input that some ranks may find and others not: a data folder or a checkpoint missing on
// one node (its local disk holds the staged copy), an output folder that one node lacks. Every
// rank checks, then all agree, so that every rank ends alike (a rank that ended alone would leave
// the others waiting for it in their next collective, and its reason unsaid, since rank 0 prints
// the line). The reason given is that of the lowest rank that found bad input, named when it is
// not rank 0. Collective over `comm`.
#include <mpi.h>

#include <functional>
#include <optional>
#include <string>

namespace sb {

// The reason of the lowest rank whose `mine` is set, on every rank ("rank R: " before it when R is
// not 0); empty on every rank when none is set.
std::optional<std::string> first_usage_error(const std::optional<std::string>& mine, MPI_Comm comm);

// The same where this rank's reason is `why_not`, empty when it can (as the implementations'
// availability checks say it).
std::optional<std::string> first_reason_against(const std::string& why_not, MPI_Comm comm);

// Runs `check` on this rank; when it throws UsageError on any rank, throws UsageError on every rank
// with first_usage_error's reason.
void agree_on_usage(MPI_Comm comm, const std::function<void()>& check);

// The first flag where this rank's flags (command_line.hpp's flags_to_agree text, after a line
// "build=..." naming the program's build) differ from rank 0's, as a reason; empty where they
// agree, values that mean the same number written differently ("1M" and "1048576", "0.1" and
// ".10") included. Collective over `comm` (rank 0's text broadcast).
std::string why_flags_differ(const std::string& flags, MPI_Comm comm);

// How the ranks of a program agree on their command lines, before any other collective: the
// lowest rank's parse error, else the lowest rank whose flags differ from rank 0's (`flags`:
// flags_to_agree's text, or "--help" after --help), on every rank; empty when they agree (then
// either every rank parsed its flags or every rank was asked for --help).
std::optional<std::string> agree_on_command_line(const std::optional<std::string>& parse_error,
                                                 const std::string& flags, MPI_Comm comm);

}  // namespace sb
