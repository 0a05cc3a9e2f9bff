"""The summaries the OpenTumorBoard, NPCBench and Neural-MedBench papers report, computed from a
cohort's arms, traces and judgement records (``consilium report``)."""
