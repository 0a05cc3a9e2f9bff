"""The AI Consilium analyses of a cohort (ai-consilium.txt): the folder's data (:mod:`.data`), the
controller-recorded outcomes (:mod:`.outcomes`), the judge's items (:mod:`.judged`), the judge-score
tables (:mod:`.scores`), their coverage (:mod:`.coverage`), the paired format differences
(:mod:`.paired`) and their statistics (:mod:`.stats`). :mod:`consilium.reports.compare` re-exports the public names."""
