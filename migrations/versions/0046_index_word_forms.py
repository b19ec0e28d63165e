"""icd10cm_word_form: the words an ICD-10-CM Index title lists as forms of one word ("Pancreas, pancreatic").

People write the adjective where the Tabular writes the noun ("pancreatic cancer": "Malignant neoplasm of pancreas";
"testicular", "testis") and the stemmer keeps the two apart. The Index pairs them in its comma-listed titles; the
loader keeps the pairs spelled alike but for their endings (medrag.sources.icd10cm.word_forms), one row per word and
each other form, both ways round, and the code finder and the search read them through medrag_word_forms
(sql/search.sql). lexeme and form_lexeme are the words as full text reads them. Releases loaded before this revision
have none until they are loaded again (`medrag load --source icd10cm --release LABEL --force`).

Revision ID: 0046
Revises: 0045
"""

from alembic import op

revision = "0046"
down_revision = "0045"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE icd10cm_word_form (
    release_id integer NOT NULL REFERENCES release(id) ON DELETE CASCADE,
    word text NOT NULL,
    form text NOT NULL,
    lexeme text GENERATED ALWAYS AS ((tsvector_to_array(to_tsvector('english', word)))[1]) STORED,
    form_lexeme text GENERATED ALWAYS AS ((tsvector_to_array(to_tsvector('english', form)))[1]) STORED,
    PRIMARY KEY (release_id, word, form)
)""")
    op.execute("CREATE INDEX icd10cm_word_form_lexeme ON icd10cm_word_form (lexeme)")
    op.execute("COMMENT ON TABLE icd10cm_word_form IS 'the words an Index title lists as forms of one word, spelled "
               "alike but for their endings: one row per word and each other form'")


def downgrade() -> None:
    op.execute("DROP TABLE icd10cm_word_form")
