-- The rubric a study rates with, whole (its JSON): a study of a rubric given as a file opens without the file,
-- and rates with the rubric it was created with even if the file changes afterwards.
ALTER TABLE studies ADD COLUMN rubric_definition TEXT;
