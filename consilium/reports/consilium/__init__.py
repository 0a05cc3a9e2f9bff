"""The AI Consilium analyses of a cohort (ai-consilium.txt): the folder's data, one protocol's arms at a
time (:mod:`.data`; its files read and checked, :mod:`.files`; the arms' protocols :mod:`.arm_protocols`),
the controller-recorded outcomes (:mod:`.outcomes`), the judge's items (:mod:`.judged`), the judge-score
tables (:mod:`.scores`), their coverage (:mod:`.coverage`), the paired format differences (:mod:`.paired`),
consilium − single (:mod:`.baseline`) and their statistics (:mod:`.stats`). :mod:`consilium.reports.compare`
re-exports the public names."""
