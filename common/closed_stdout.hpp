#pragma once
// A program whose standard output closes early (`| head`, a `tee` that died) would be killed by
// SIGPIPE at its next line, before it saves its results file, and say nothing. Every program
// ignores SIGPIPE instead: its prints then fail quietly, the run goes on and saves what it
// measured, and at exit one line on stderr says that standard output was cut short.
namespace sb {

// Call first thing in main(). `program` names the program in that line (a string literal).
void outlive_closed_stdout(const char* program);

}  // namespace sb
