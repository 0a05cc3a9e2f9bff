"""Role-label mapping: labels a capable model writes map to the right specialty.

The paper keeps each model-assigned label with its category (ai-consilium.txt, Fig. 2c
caption, line 41); the mapping itself is this project's (consilium/roles/mapping.py).
"""

from __future__ import annotations

import random

import pytest

from consilium.roles.catalogue import Catalogue, load_catalogue

# (label as a model writes it, expected category id)
LABELS: list[tuple[str, str]] = [
    # cardiology and cardiac imaging
    ("Interventional cardiologist", "cardiology"),
    ("Cardiac electrophysiologist", "cardiology"),
    ("Heart failure cardiologist", "cardiology"),
    ("Consultant cardiologist", "cardiology"),
    ("Cardiologist (interventional)", "cardiology"),
    ("Cardiac imaging specialist", "radiology"),
    ("Cardiac radiologist", "radiology"),
    # surgeons stay surgical
    ("Thoracic surgeon", "cardiothoracic_surgery"),
    ("Cardiothoracic surgeon", "cardiothoracic_surgery"),
    ("Heart transplant surgeon", "cardiothoracic_surgery"),
    ("Lung surgeon", "cardiothoracic_surgery"),
    ("Breast surgeon", "general_surgery"),
    ("Paediatric surgeon", "general_surgery"),
    ("Pediatric surgeon", "general_surgery"),
    ("Endocrine surgeon", "general_surgery"),
    ("Plastic surgeon", "general_surgery"),
    ("Colorectal surgeon", "general_surgery"),
    ("Hepatobiliary surgeon", "general_surgery"),
    ("Liver transplant surgeon", "general_surgery"),
    ("Surgical oncologist", "general_surgery"),
    ("Trauma surgeon", "general_surgery"),
    ("Neurosurgeon", "neurosurgery"),
    ("Pediatric neurosurgeon", "neurosurgery"),
    ("Brain surgeon", "neurosurgery"),
    ("Spine surgeon", "neurosurgery"),
    ("Orthopaedic surgeon", "orthopedic_surgery"),
    ("Foot and ankle surgeon", "orthopedic_surgery"),
    ("Vascular surgeon", "vascular_surgery"),
    ("Urological surgeon", "urology"),
    ("ENT surgeon", "otolaryngology"),
    ("Head and neck surgeon", "otolaryngology"),
    ("Eye surgeon", "ophthalmology"),
    # "surgical" as a qualifier does not make a pathologist a surgeon
    ("Surgical pathologist", "pathology"),
    # imaging and laboratory
    ("Neuroradiologist", "radiology"),
    ("Interventional radiologist", "radiology"),
    ("Musculoskeletal radiologist", "radiology"),
    ("Breast radiologist", "radiology"),
    ("Thoracic radiologist", "radiology"),
    ("Nuclear medicine physician", "nuclear_medicine"),
    ("PET-CT specialist", "nuclear_medicine"),
    ("Histopathologist", "pathology"),
    ("Haematopathologist", "pathology"),
    ("Neuropathologist", "pathology"),
    ("Molecular pathologist", "molecular_pathology"),
    ("Clinical microbiologist", "infectious_diseases"),
    # medical specialties
    ("Clinical geneticist", "medical_genetics"),
    ("Cancer geneticist", "medical_genetics"),
    ("Genetic counsellor", "medical_genetics"),
    ("Hepatologist", "hepatology"),
    ("Transplant hepatologist", "hepatology"),
    ("Gastroenterologist", "gastroenterology"),
    ("Interventional endoscopist", "gastroenterology"),
    ("Interventional pulmonologist", "pulmonology"),
    ("Respiratory physician", "pulmonology"),
    ("Sleep physician", "pulmonology"),
    ("Stroke neurologist", "neurology"),
    ("Neuro-oncologist", "medical_oncology"),
    ("Neuro-ophthalmologist", "ophthalmology"),
    ("Medical oncologist", "medical_oncology"),
    ("Thoracic oncologist", "medical_oncology"),
    ("Pediatric oncologist", "medical_oncology"),
    ("Clinical oncologist", "medical_oncology"),
    ("Radiation oncologist", "radiation_oncology"),
    ("Gynaecological oncologist", "obstetrics_gynecology"),
    ("Haematologist", "hematology"),
    ("Haemato-oncologist", "hematology"),
    ("Pediatric hematologist-oncologist", "hematology"),
    ("Transfusion medicine specialist", "hematology"),
    ("Infectious diseases physician", "infectious_diseases"),
    ("Pediatric infectious disease specialist", "infectious_diseases"),
    ("HIV specialist", "infectious_diseases"),
    ("Nephrologist", "nephrology"),
    ("Transplant nephrologist", "nephrology"),
    ("Endocrinologist", "endocrinology"),
    ("Rheumatologist", "rheumatology"),
    ("Clinical immunologist", "immunology_allergy"),
    ("Allergist", "immunology_allergy"),
    ("Dermatologist", "dermatology"),
    ("Consultation-liaison psychiatrist", "psychiatry"),
    ("General paediatrician", "pediatrics"),
    ("Neonatologist", "pediatrics"),
    ("Maternal-fetal medicine specialist", "obstetrics_gynecology"),
    ("Obstetrician", "obstetrics_gynecology"),
    ("Urologist", "urology"),
    ("Otolaryngologist", "otolaryngology"),
    ("General internist", "internal_medicine"),
    ("Hospitalist", "internal_medicine"),
    ("Intensivist", "critical_care"),
    ("Critical care physician", "critical_care"),
    ("Emergency physician", "emergency_medicine"),
    ("Palliative care physician", "palliative_care"),
    ("Palliative medicine consultant", "palliative_care"),
    ("Geriatrician", "geriatrics"),
    ("Cardiac anaesthetist", "anesthesiology"),
    ("Pain medicine specialist", "anesthesiology"),
    ("Clinical pharmacist", "clinical_pharmacology"),
    ("Toxicologist", "clinical_pharmacology"),
    ("Rehabilitation physician", "rehabilitation_medicine"),
    ("Wound care nurse", "other"),
    ("Dietitian", "other"),
]


def test_the_table_is_large_and_distinct() -> None:
    assert len(LABELS) >= 60
    assert len({label for label, _ in LABELS}) == len(LABELS)


@pytest.mark.parametrize(("label", "expected"), LABELS)
def test_label_maps_to_its_specialty(label: str, expected: str) -> None:
    assert load_catalogue().map_label(label).id == expected


def test_catalogue_names_map_to_themselves() -> None:
    for category in load_catalogue().categories:
        assert load_catalogue().map_label(category.name).id == category.id


def test_mapping_does_not_depend_on_catalogue_order() -> None:
    catalogue = load_catalogue()
    labels = [label for label, _ in LABELS]
    expected = [catalogue.map_label(label).id for label in labels]
    rng = random.Random(15)
    for _ in range(5):
        shuffled = list(catalogue.categories)
        rng.shuffle(shuffled)
        reordered = catalogue.model_copy(update={"categories": shuffled})
        assert [reordered.map_label(label).id for label in labels] == expected


def test_surgical_fallback_must_be_surgical() -> None:
    data = load_catalogue().model_dump()
    data["surgical_fallback"] = "cardiology"
    with pytest.raises(ValueError, match="surgical_fallback"):
        Catalogue.model_validate(data)
