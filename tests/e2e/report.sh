# sb-report end to end: a small campaign of real runs (allreduce at 1, 2 and 4 ranks on two
# "interconnects", compression, a bucket sweep, training at 1 and 2 ranks, kernels) with a truncated file
# and an unfinished run's temporary file beside them. Every plot is rendered as a valid PNG and
# SVG, the data files hold the HDF5 numbers, the merged file reports the same, and bad input is
# refused with exit status 2.
source "$(dirname "$0")/helpers.bash"
camp=$WORK/campaign
mkdir -p "$camp"
ok=1
for np in 1 2 4; do
  $MPIRUN -np $np "$BIN/sb-allreduce" -b 1K -e 256K -f 4 -n 3 -w 1 --impl mpi,ring --label interconnect=shm \
    --out "$camp/ar-shm-np$np.h5" >/dev/null 2>>"$WORK/runs.err" || ok=0
done
$MPIRUN -np 2 "$BIN/sb-allreduce" -b 1K -e 256K -f 4 -n 3 -w 1 --impl mpi,ring --transport shm \
  --label interconnect=other --out "$camp/ar-other-np2.h5" >/dev/null 2>>"$WORK/runs.err" || ok=0
$MPIRUN -np 2 "$BIN/sb-compress" -b 64K -e 256K -f 4 -n 2 -w 1 --out "$camp/compress.h5" >/dev/null 2>>"$WORK/runs.err" || ok=0
$MPIRUN -np 2 "$BIN/sb-buckets" --model resnet20 --image-size 28 --batch 16 --threads 1 --compute-scale 0.2 \
  -b 0.25 -e 1 -n 1 -w 0 --trace "$camp/buckets.trace.json" --out "$camp/buckets.h5" >/dev/null 2>>"$WORK/runs.err" || ok=0
"$BIN/sb-idx2folder" --out "$WORK/folder" --train-limit 512 --val-limit 128 >/dev/null || ok=0
for np in 1 2; do
  trace=() && [[ $np -eq 2 ]] && trace=(--trace "$camp/train-np2.trace.json")
  $MPIRUN --bind-to none -np $np "$BIN/sb-train" --threads 1 --data "imagefolder:$WORK/folder" --image-size 28 \
    --epochs 2 --batch 64 --target-accuracy 0.2 "${trace[@]}" --out "$camp/train-np$np.h5" >/dev/null 2>>"$WORK/runs.err" || ok=0
done
"$BIN/sb-micro" --benchmark_filter='BM_(memcpy|triad)/262144' --benchmark_min_time=0.01 --out "$camp/micro.h5" \
  >/dev/null 2>>"$WORK/runs.err" || ok=0
check "the campaign's runs exit 0" test $ok -eq 1 || cat "$WORK/runs.err"
head -c 2000 "$camp/ar-shm-np2.h5" >"$camp/truncated.h5"
echo "partial" >"$camp/killed.h5.tmp-4242"

"$BIN/sb-report" --samples --out "$WORK/report" "$camp" >"$WORK/report.out" 2>"$WORK/report.err"
check "sb-report exits 0 on a campaign with a truncated and an unfinished file" test $? -eq 0
check "it names the truncated file" grep -q 'skipped .*truncated.h5: .*truncated' "$WORK/report.err"
check "it names the unfinished run's file" grep -q 'skipped .*killed.h5.tmp-4242: .*unfinished' "$WORK/report.err"
check "index.html lists them as skipped" grep -q 'truncated.h5' "$WORK/report/index.html"

# One bit of a measured value flipped, which HDF5 reads without complaint (and sb-report had
# plotted): the file's seal finds it. In a folder the file is skipped, named alone it is refused.
mkdir -p "$WORK/flipped"
cp "$camp/ar-shm-np4.h5" "$WORK/flipped/ar.h5"  # at 2 ranks busbw = algbw: each value is stored twice
busbw=$(h5dump -m %.17g -d /allreduce/mpi/out_of_place/busbw_GBps "$WORK/flipped/ar.h5" | sed -n 's/.*(0): \([^,]*\),.*/\1/p')
check "one bit of a busbw ($busbw) flipped" perl -e 'my ($f, $v) = @ARGV; open(my $h, "+<:raw", $f) or die; local $/; my $b = <$h>;
         my $p = pack("d<", $v); my $at = index($b, $p); die "not found" if $at < 0 || index($b, $p, $at + 1) >= 0;
         seek($h, $at, 0); print $h chr(ord(substr($b, $at, 1)) ^ 1); close($h)' "$WORK/flipped/ar.h5" "$busbw"
cp "$camp/ar-shm-np2.h5" "$WORK/flipped/"
"$BIN/sb-report" --no-render --out "$WORK/flipped-report" "$WORK/flipped" >/dev/null 2>"$WORK/flipped.err"
check "a folder with a flipped file is reported from the rest" test $? -eq 0
check "naming the flipped file and why" grep -q 'skipped .*ar.h5: .*does not match its checksum' "$WORK/flipped.err"
"$BIN/sb-report" --no-render --out "$WORK/flipped-alone" "$WORK/flipped/ar.h5" >/dev/null 2>"$WORK/flipped.err"
check "the flipped file named alone is bad input" test $? -eq 2
check "called damage" grep -q "^sb-report: error: .*ar.h5': is damaged: its content does not match its checksum" "$WORK/flipped.err"

# Every script rendered a real PNG and a complete SVG, and index.html shows each PNG.
plots=0 bad_images=""
for gp in "$WORK/report"/*.gp; do
  name=$(basename "$gp" .gp)
  plots=$((plots + 1))
  [[ $(head -c 8 "$WORK/report/$name.png" 2>/dev/null | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || bad_images+=" $name.png"
  grep -q '<svg' "$WORK/report/$name.svg" 2>/dev/null && tail -c 200 "$WORK/report/$name.svg" | grep -q '</svg>' || bad_images+=" $name.svg"
  grep -q "src=\"$name.png\"" "$WORK/report/index.html" || bad_images+=" (index:$name)"
done
check "every plot is a valid PNG and SVG shown in index.html${bad_images:+ (bad:$bad_images)}" test -z "$bad_images"
for name in allreduce-busbw-np2 allreduce-latency-np4 compress-throughput-np2 compress-error-np2 buckets-iteration-np2 \
  buckets-exposed-np2 train-top1-vs-time train-top1-vs-epoch scaling-allreduce-speedup scaling-allreduce-efficiency \
  scaling-train-throughput-speedup scaling-train-throughput-efficiency micro-traffic micro-x-memcpy; do
  check "plot $name is drawn" test -s "$WORK/report/$name.png"
done
check "summary.txt has a table per plot" test "$(grep -c '^## ' "$WORK/report/summary.txt")" -eq $plots
check "the cycle strategy's line names its cycle time" grep -q 'title "cycle (1 ms cycles)"' "$WORK/report/buckets-iteration-np2.gp"

# The data files hold the file's numbers: mpi's busbw at 4 ranks, and the 2-rank training curve.
block() { awk -v want="$2" '/^# index/ { on = index($0, want) > 0; next } on && NF { print $2 }' "$1"; }
same_numbers() {  # same_numbers A B: the same count of numbers, each equal to the 9 significant digits the data files keep
  paste <(echo "$1") <(echo "$2") | awk 'NF != 2 { bad = 1 } NF == 2 { d = $1 - $2; if (d < 0) d = -d; s = $1 < 0 ? -$1 : $1;
    if (d > 1e-8 * s + 1e-12) bad = 1 } END { exit bad }' && [[ $(echo "$1" | wc -l) -eq $(echo "$2" | wc -l) ]]
}
file_busbw=$(h5values "$camp/ar-shm-np4.h5" /allreduce/mpi/out_of_place/busbw_GBps)
check "busbw data equal the HDF5 busbw_GBps" same_numbers "$file_busbw" "$(block "$WORK/report/data/allreduce-busbw-np4.dat" ': mpi')"
file_top1=$(h5values "$camp/train-np2.h5" /train/curve/top1 | grep -v nan)
check "top-1 data equal the HDF5 curve" same_numbers "$file_top1" "$(block "$WORK/report/data/train-top1-vs-epoch.dat" 'train-np2')"
check "--by is off: two interconnects at 2 ranks are told apart by run name" grep -q '# index .*: mpi (ar-other-np2)' \
  "$WORK/report/data/allreduce-busbw-np2.dat"

# The CSV tables: one row per value row of every run (the values themselves: unit test ReportTables).
rows() { echo $(($(wc -l <"$WORK/report/tables/$1.csv") - 1)); }
for table in allreduce allreduce-iterations compress buckets buckets-tensors train-runs train-epochs train-steps \
  train-rank-steps micro; do
  check "tables/$table.csv is written" test -s "$WORK/report/tables/$table.csv"
done
# 4 runs x 2 implementations x 2 placements x 5 sizes (1K to 256K by 4).
check "allreduce.csv has a row per run, implementation, placement and size ($(rows allreduce))" test "$(rows allreduce)" -eq 80
check "its header names the run, its labels, the group and the values" \
  grep -q '^run,source,program,run_id,ranks,.*label:interconnect,group,placement,.*size_bytes,.*busbw_GBps' \
  "$WORK/report/tables/allreduce.csv"
# ... and in allreduce-iterations, x ranks (1, 2, 4 and 2) x 3 timed iterations.
check "allreduce-iterations.csv has a row per timed iteration of every rank ($(rows allreduce-iterations))" \
  test "$(rows allreduce-iterations)" -eq $((20 * 3 * (1 + 2 + 4 + 2)))
check "train-runs.csv has a row per training run" test "$(rows train-runs)" -eq 2
rank_steps=$(( $(h5values "$camp/train-np1.h5" /train/rank_compute_s | wc -l) + $(h5values "$camp/train-np2.h5" /train/rank_compute_s | wc -l) ))
check "train-rank-steps.csv has a row per rank and step ($rank_steps)" test "$(rows train-rank-steps)" -eq "$rank_steps"
check "index.html links every table with its rows" grep -q '<a href="tables/allreduce.csv">allreduce</a> (80 rows)' \
  "$WORK/report/index.html"
epochs=$(( $(h5values "$camp/train-np1.h5" /train/curve/epoch | wc -l) + $(h5values "$camp/train-np2.h5" /train/curve/epoch | wc -l) ))
check "train-epochs.csv has a row per finished epoch ($epochs)" test "$(rows train-epochs)" -eq "$epochs"

# The runs' traces: named in summary.txt and linked from the report's folder; a campaign moved with
# its traces beside its files still finds them there; a trace that is nowhere is said to be missing.
check "summary.txt names the buckets run's trace" grep -q "^# run buckets: .*; trace: $camp/buckets.trace.json\$" \
  "$WORK/report/summary.txt"
check "index.html links both traces from the report's folder" bash -c "grep -q '<a href=\"../campaign/buckets.trace.json\">' \
  '$WORK/report/index.html' && grep -q '<a href=\"../campaign/train-np2.trace.json\">' '$WORK/report/index.html'"
check "... and no run without one" test "$(grep -c '\.trace\.json</a>' "$WORK/report/index.html")" -eq 2
mkdir -p "$WORK/moved #1" "$WORK/lonely"
cp "$camp/buckets.h5" "$WORK/lonely/" && cp "$camp/buckets.h5" "$WORK/moved #1/" && mv "$camp/buckets.trace.json" "$WORK/moved #1/"
"$BIN/sb-report" --no-render --out "$WORK/moved-report" "$WORK/moved #1" >/dev/null 2>&1
check "a trace moved with its run is found beside it, its link escaped" \
  grep -q '<a href="../moved%20%231/buckets.trace.json">' "$WORK/moved-report/index.html"
"$BIN/sb-report" --no-render --out "$WORK/lonely-report" "$WORK/lonely" >/dev/null 2>&1
check "a trace found nowhere is named as not found" \
  grep -q "^# run buckets: .*; trace: $camp/buckets.trace.json (not found)\$" "$WORK/lonely-report/summary.txt"

# A campaign compressed by h5repack (chunked, gzip) had its datasets refused as shapes claiming more
# than the file holds; its values, and so its seal, are the same.
mkdir -p "$WORK/packed"
h5repack -f GZIP=9 "$camp/ar-shm-np4.h5" "$WORK/packed/ar.h5"
"$BIN/sb-report" --no-render --out "$WORK/packed-report" "$WORK/packed" >/dev/null 2>"$WORK/packed.err"
check "a file compressed by h5repack is read (exit $?)" test $? -eq 0 -a ! -s "$WORK/packed.err"
check "without --samples, no per-sample tables" test -s "$WORK/packed-report/tables/allreduce.csv" -a \
  ! -e "$WORK/packed-report/tables/allreduce-iterations.csv"
check "with its numbers" same_numbers "$(h5values "$camp/ar-shm-np4.h5" /allreduce/mpi/out_of_place/busbw_GBps)" \
  "$(block "$WORK/packed-report/data/allreduce-busbw-np4.dat" ': mpi')"

# --by interconnect: the lines are named by the label.
"$BIN/sb-report" --by interconnect --format svg --out "$WORK/by" "$camp" >/dev/null 2>&1
check "--by interconnect names lines by the label" grep -q '# index .*: ring@shm interconnect=other' "$WORK/by/data/allreduce-busbw-np2.dat"
check "--format svg draws no PNG" test -z "$(ls "$WORK/by" | grep '\.png$')"

# A script re-runs by hand from the report folder.
rm "$WORK/report/allreduce-busbw-np2.png"
(cd "$WORK/report" && gnuplot allreduce-busbw-np2.gp) >/dev/null 2>&1
check "a .gp script re-renders its plot" test -s "$WORK/report/allreduce-busbw-np2.png"

# Merge: one file with every run, grouped; reporting it gives the same data files.
mkdir -p "$WORK/merge-here"
bin=$(cd "$BIN" && pwd)
(cd "$WORK/merge-here" && "$bin/sb-report" --merge "$WORK/campaign.h5" "$camp") >"$WORK/merge.out" 2>/dev/null
check "--merge exits 0" test $? -eq 0
check "--merge reports the runs and the skipped files" grep -q 'merged 9 runs into .* (2 files skipped)' "$WORK/merge.out"
check "merged runs are grouped by program, ranks and labels" \
  bash -c "h5ls -r '$WORK/campaign.h5' | grep -q '^/runs/sb-allreduce/ranks-4/interconnect=shm/ar-shm-np4 '"
check "--merge alone writes no report" test -z "$(ls -A "$WORK/merge-here")"
"$BIN/sb-report" --out "$WORK/from-merged" "$WORK/campaign.h5" >/dev/null 2>&1
check "the merged file reports the same numbers" diff -r "$WORK/report/data" "$WORK/from-merged/data"
# The merged file kept in the campaign's folder: its runs are the folder's, counted once (they
# were counted twice), and merging again rewrites it.
cp "$WORK/campaign.h5" "$camp/all.h5"
"$BIN/sb-report" --out "$WORK/beside" "$camp" >/dev/null 2>"$WORK/beside.err"
check "a merged file beside its runs: each run counted once" diff -r "$WORK/report/data" "$WORK/beside/data"
check "and said once" grep -q '^sb-report: 9 runs read more than once, each counted once' "$WORK/beside.err"
"$BIN/sb-report" --merge "$camp/all.h5" "$camp" >"$WORK/remerge.out" 2>/dev/null
check "merging again into the folder's merged file" grep -q 'merged 9 runs into' "$WORK/remerge.out"
cp "$camp/ar-shm-np2.h5" "$WORK/run-before.h5"
"$BIN/sb-report" --merge "$camp/ar-shm-np2.h5" "$camp" >"$WORK/bad.out" 2>"$WORK/bad.err"
check "--merge into a run's own file: exit 2 ($?), one line" \
  bash -c "test $? -eq 2 && grep -q '^sb-report: error: --merge .* is one of the runs read' '$WORK/bad.err'"
check "and the run's file is left as it was" cmp -s "$camp/ar-shm-np2.h5" "$WORK/run-before.h5"
rm "$camp/all.h5"

# Bad input: one line, exit status 2, no report.
bad_input() {
  local name=$1; shift
  "$BIN/sb-report" "$@" >"$WORK/bad.out" 2>"$WORK/bad.err"
  local rc=$?
  if [[ $rc -eq 2 && $(grep -c '^sb-report: error: ' "$WORK/bad.err") -eq 1 ]]; then pass "bad input: $name"
  else fail "bad input: $name" "rc=$rc $(cat "$WORK/bad.err")"; fi
}
mkdir -p "$WORK/empty"
echo "not hdf5" >"$WORK/junk.h5"
bad_input "no HDF5 files" --out "$WORK/r1" "$WORK/empty"
bad_input "an unreadable file" --out "$WORK/r2" "$WORK/junk.h5"
bad_input "a missing path" --out "$WORK/r3" "$WORK/nothing-here"
bad_input "an unknown --by label" --by rack --out "$WORK/r4" "$camp"
bad_input "a bad --format" --format jpeg --out "$WORK/r5" "$camp"
bad_input "a bad --size" --size 12Q --out "$WORK/r6" "$camp"
# A size no sweep measured had left the scaling plots out without a word.
bad_input "a --size no run measured" --size 3K --out "$WORK/r6" "$camp"
check "which it says, with the sizes measured" grep -q -- '--size 3KB: no sb-allreduce or sb-compress run measured it (they measured' "$WORK/bad.err"
check "and writes no report" test ! -e "$WORK/r6"
bad_input "no input" --out "$WORK/r7"
# A gnuplot that is not there is found out before anything is written.
bad_input "a missing gnuplot" --gnuplot /nonexistent/gnuplot --out "$WORK/r8" "$camp"
check "it says how to fix it" grep -q 'install gnuplot-nox, or pass --no-render' "$WORK/bad.err"
check "and writes no report" test ! -e "$WORK/r8"
bad_input "a folder as --gnuplot" --gnuplot "$WORK" --out "$WORK/r9" "$camp"
bad_input "no gnuplot on PATH" --gnuplot gnuplot-not-installed --out "$WORK/r10" "$camp"
"$BIN/sb-report" --gnuplot /nonexistent/gnuplot --no-render --out "$WORK/r11" "$camp" >/dev/null 2>&1
check "--no-render needs no gnuplot" test $? -eq 0 -a -e "$WORK/r11/summary.txt"
