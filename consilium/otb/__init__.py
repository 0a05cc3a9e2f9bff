"""OpenTumorBoard's deterministic scores as the authors' published code computes them (the format score of
opentumorboard.txt App. E.2, its repetition and overlength penalties, the lenient conclusion extraction and
ROUGE-L), written from that code's behaviour so a consilium number sits beside the paper's and the
leaderboard's (docs/opentumorboard.md)."""
