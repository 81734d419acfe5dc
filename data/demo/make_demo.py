"""Rebuild the binary demo documents (PDF, DOCX, PPTX) of the Brightwater Analytics demo corpus.

    .venv/bin/python data/demo/make_demo.py            # writes next to this script
    .venv/bin/python data/demo/make_demo.py --check    # exit 1 if a checked-in file differs

The text-format documents (Markdown, HTML, TXT, CSV) are authored by hand in this folder; the
three binary ones are generated here from the text below. Output is byte-for-byte
deterministic: fixed document metadata, reportlab's invariant mode, and ZIP members written
with a fixed timestamp. All names, figures and contacts are fictitious.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXED_TIME = dt.datetime(2025, 7, 1, 9, 0, 0)
AUTHOR = "Brightwater Analytics"

# --- travel policy (PDF): one list of paragraphs per page ------------------------------------
# Each entry: ("h1" | "h2" | "p" | "li", text).

TRAVEL_PAGES: list[list[tuple[str, str]]] = [
    [
        ("h1", "Brightwater Analytics Global Travel Policy"),
        ("p", "Policy TP-2025, effective 1 April 2025. Owner: Finance (travel@brightwater.example)."),
        ("h2", "1. Purpose and scope"),
        (
            "p",
            "This policy explains how employees of Brightwater Analytics book, take and claim business "
            "travel. It applies to all employees and contractors travelling on company business, in every "
            "country. Employees of the Shanghai office follow the Shanghai expense policy for travel within "
            "mainland China and this policy for all other trips.",
        ),
        (
            "p",
            "We travel when meeting in person makes a real difference: customer workshops, team "
            "offsites, conferences where we speak or exhibit, and hiring. Internal status meetings are "
            "held by video.",
        ),
        ("h2", "2. Before you travel"),
        (
            "p",
            "Every trip needs pre-approval in Ledgerly before anything is booked. Your manager approves "
            "domestic trips. International trips must be approved by a director at least 14 days before "
            "departure; trips approved later are allowed only for customer emergencies.",
        ),
        (
            "p",
            "Book flights, trains, hotels and rental cars through Tripwise, the company travel portal, "
            "which applies our negotiated rates and lets the security team reach you in an emergency. "
            "Bookings made outside Tripwise are reimbursed only when they cost less than the cheapest "
            "comparable Tripwise option, and you must attach a screenshot of that option.",
        ),
        (
            "p",
            "Check passport validity and visa requirements yourself: many countries require a passport "
            "valid for at least 6 months after the date of entry. Visa fees are reimbursed.",
        ),
    ],
    [
        ("h2", "3. Getting there"),
        (
            "p",
            "3.1 Air travel. Book the lowest logical fare available at the time of booking, with at "
            "most one stop where a direct flight is not available. Economy class is used for flights of "
            "up to 6 hours. Premium economy may be booked for flights longer than 6 hours. Business class "
            "is allowed only for flights longer than 10 hours of scheduled flying time, and only with the "
            "approval of a VP.",
        ),
        (
            "p",
            "One checked bag per trip is reimbursed. Seat selection fees up to USD 40 per flight are "
            "reimbursed; upgrades paid for by the company are not allowed. Frequent flyer miles and hotel "
            "points earned on business trips may be kept for personal use.",
        ),
        (
            "p",
            "3.2 Rail. Standard class is used for rail journeys. First class may be booked for journeys "
            "longer than 3 hours, or when it costs no more than standard class.",
        ),
        (
            "p",
            "3.3 Rental cars. Rent a compact or intermediate car, and share cars when several colleagues "
            "travel together. Decline the rental company's extra collision insurance in the United States "
            "and Canada, where the corporate insurance policy already covers it. Fuel is reimbursed at "
            "cost; refuel before returning the car.",
        ),
        (
            "p",
            "3.4 Private cars. Using your own car for business trips is reimbursed at USD 0.67 per mile "
            "in the United States, CAD 0.70 per kilometre in Canada, and EUR 0.45 per kilometre in "
            "Ireland. Parking and tolls are reimbursed with receipts; fines are never reimbursed.",
        ),
        (
            "p",
            "3.5 Taxis and ride-hailing. Use public transport where it is practical. Taxis and "
            "ride-hailing are reimbursed for trips to and from airports and stations, late at night, and "
            "when carrying equipment.",
        ),
    ],
    [
        ("h2", "4. Accommodation"),
        (
            "p",
            "Book standard rooms in business hotels close to where you work. The nightly room rate, "
            "excluding taxes, must not exceed the cap for the city tier:",
        ),
        ("li", "Tier A cities (New York, San Francisco, London, Zurich, Singapore, Tokyo): USD 320 per night."),
        ("li", "Tier B cities (Boston, Chicago, Toronto, Dublin, Paris, Sydney, Shanghai): USD 230 per night."),
        ("li", "All other cities: USD 180 per night."),
        (
            "p",
            "Rates above the cap need your director's approval in Ledgerly before booking, for example "
            "during a large trade fair. Short-term rentals are allowed within the same caps. Staying "
            "with friends or family is welcome but is not compensated with an allowance.",
        ),
        ("h2", "5. Meals and per diems"),
        (
            "p",
            "Meals on business trips are covered by a daily per diem instead of receipts. The per diem is "
            "USD 75 per day for domestic trips and USD 95 per day for international trips. On the day "
            "you leave and the day you return, 75% of the daily rate is paid.",
        ),
        (
            "p",
            "Meals that are already provided, such as conference lunches or breakfast included in the "
            "hotel rate, are deducted from the per diem: 20% for breakfast, 30% for lunch and 50% for "
            "dinner. Alcohol is not reimbursed, except as part of approved client entertainment under the "
            "Employee Handbook.",
        ),
    ],
    [
        ("h2", "6. Safety and insurance"),
        (
            "p",
            "All business trips are covered by the company travel insurance from Meridian Assist, "
            "including medical treatment, evacuation and lost luggage. The Meridian Assist emergency line "
            "is available 24 hours a day on +1 503 555 0199. Keep the insurance card from the Tripwise "
            "confirmation email on your phone.",
        ),
        (
            "p",
            "Trips to destinations rated high risk by Meridian Assist need written approval from the "
            "security team in addition to the normal approval, and a check-in call every 24 hours while "
            "you are there. If something happens, your safety comes first: leave, then tell us.",
        ),
        ("h2", "7. After your trip"),
        (
            "p",
            "Submit your travel expense report in Ledgerly within 30 days of returning, with itemised "
            "receipts for every expense except per diems. Unused or partly used tickets must be reported "
            "to Tripwise so that the credit can be used for a later trip.",
        ),
        (
            "p",
            "Costs that are not reimbursed include: fines and penalties, personal entertainment, minibar "
            "items, laundry on trips shorter than 5 nights, travel for a partner or family member, and "
            "lost personal items beyond the insurance cover.",
        ),
        ("h2", "8. Questions"),
        (
            "p",
            "Questions about this policy go to travel@brightwater.example. Exceptions are approved by the "
            "CFO, Dana Whitfield, and are recorded with the expense report.",
        ),
    ],
]

# --- data retention policy (DOCX) --------------------------------------------------------------
# Each entry: (heading level 0 = body paragraph, text).

RETENTION: list[tuple[int, str]] = [
    (1, "Data Retention and Deletion Policy"),
    (
        0,
        "Policy DRP-002, version 1.4, effective 1 July 2024. Owner: Legal and Privacy. "
        "Data Protection Officer: Tomás Herrera (privacy@brightwater.example).",
    ),
    (1, "1. Purpose"),
    (
        0,
        "We keep data only for as long as we need it for the purpose it was collected for, or as long as "
        "the law requires. This policy sets the retention period for each kind of record we hold and how "
        "records are deleted when that period ends.",
    ),
    (1, "2. Scope"),
    (
        0,
        "The policy covers all records held by Brightwater Analytics and its subsidiaries, in every "
        "system and format, including customer data processed in the Brightwater Insight platform, backups, "
        "logs, email and paper files. Where local law sets a longer period, the local law applies.",
    ),
    (1, "3. Retention schedule"),
    (2, "3.1 Customer data"),
    (
        0,
        "Customer content in Brightwater Insight is kept for the duration of the subscription. After a "
        "contract ends, customers can export their data for 30 days. All customer content is deleted "
        "within 90 days after contract termination, unless the customer asks in writing for earlier "
        "deletion.",
    ),
    (2, "3.2 Backups"),
    (
        0,
        "Production databases are backed up every 6 hours. Encrypted backups are retained for 35 days "
        "and then overwritten, so data deleted from production disappears from backups within 35 days.",
    ),
    (2, "3.3 Logs"),
    (
        0,
        "Application and access logs are kept for 13 months, which allows year-on-year comparisons. "
        "Security audit logs are kept for 3 years. Logs must not contain passwords, access tokens or "
        "customer content.",
    ),
    (2, "3.4 Financial records"),
    (
        0,
        "Invoices, ledgers, expense claims and tax records are kept for 7 years after the end of the "
        "fiscal year they relate to.",
    ),
    (2, "3.5 Employee and candidate records"),
    (
        0,
        "Personnel files are kept for 6 years after employment ends. Data about unsuccessful job "
        "candidates is deleted 12 months after the hiring decision, unless the candidate agrees to be "
        "considered for future roles.",
    ),
    (2, "3.6 Support tickets and marketing contacts"),
    (
        0,
        "Support tickets are kept for 24 months after they are closed. Marketing contacts who have not "
        "opened an email or visited our website for 24 months are deleted; anyone who unsubscribes is "
        "removed from mailing lists within 2 working days.",
    ),
    (1, "4. Legal holds"),
    (
        0,
        "When litigation, an audit or an investigation is expected, Legal issues a legal hold notice. A "
        "legal hold suspends deletion of the records it names, overriding this schedule, until Legal "
        "releases the hold in writing. Recipients confirm the hold within 5 working days.",
    ),
    (1, "5. How data is deleted"),
    (2, "5.1 Electronic records"),
    (
        0,
        "Electronic records are deleted with the deletion tools of the system that holds them. Customer "
        "datasets are crypto-shredded: their encryption keys are destroyed, which makes every copy "
        "unreadable. Storage media leaving our control are sanitised following NIST SP 800-88.",
    ),
    (2, "5.2 Certificates of deletion"),
    (
        0,
        "On request, the Privacy team issues a certificate of deletion to a customer within 10 business "
        "days of completing the deletion.",
    ),
    (1, "6. Roles and review"),
    (
        0,
        "System owners make sure their systems follow the schedule. The Data Protection Officer reviews "
        "this policy every year in the first quarter and reports exceptions to the audit committee.",
    ),
    (1, "Retention schedule summary"),
]

RETENTION_TABLE = [
    ("Record type", "Retention period"),
    ("Customer content after termination", "deleted within 90 days"),
    ("Backups", "35 days"),
    ("Application and access logs", "13 months"),
    ("Security audit logs", "3 years"),
    ("Financial records", "7 years after fiscal year end"),
    ("Personnel files", "6 years after employment ends"),
    ("Support tickets", "24 months after closure"),
]

# --- product roadmap (PPTX): (title, bullet lines) per slide -----------------------------------

ROADMAP_TITLE = (
    "Brightwater Insight Product Roadmap: Q3 2025",
    "Product Management. Presented on 1 July 2025 by Helena Voss, VP Product",
)
ROADMAP_SLIDES: list[tuple[str, list[str]]] = [
    (
        "Q2 2025 in review",
        [
            "Shipped Insight 5.1.0 on 10 June 2025 with natural language query in preview",
            "38 enterprise customers enabled the natural language query preview",
            "Net Promoter Score rose from 41 to 47",
            "Dashboard load time at p95 fell to 2.8 seconds",
        ],
    ),
    (
        "Q3 2025 themes",
        [
            "Natural language query: from preview to general availability",
            "Governance: column-level lineage for every dataset",
            "Performance: every dashboard loads in under 2 seconds at p95",
            "Trust: EU data residency for customers who need it",
        ],
    ),
    (
        "Q3 2025 milestones",
        [
            "Insight 5.2 general availability: 19 August 2025",
            "Column-level lineage beta: 9 September 2025",
            "EU data residency in the Frankfurt region: 30 September 2025",
            "SOC 2 Type II report renewal: September 2025",
        ],
    ),
    (
        "Customer commitments for Q3",
        [
            "EU data residency for the 12 enterprise customers who asked for it in their renewals",
            "Natural language query in 8 languages at general availability, including Chinese and German",
            "Lineage beta with 10 design partners, chosen by Customer Success by 31 July 2025",
            "No price changes for existing plans before 1 January 2026",
        ],
    ),
    (
        "How we will measure Q3",
        [
            "Weekly use of natural language query by 60% of preview customers by 30 September 2025",
            "Dashboard load time under 2 seconds at p95 across all regions",
            "Quarterly logo churn below 1.5%",
            "Support: first response to priority 1 tickets within 30 minutes, 24 hours a day",
        ],
    ),
    (
        "Deprecations announced this quarter",
        [
            "The legacy PDF exporter is removed in Insight 5.2; use the new report exporter",
            "Python SDK 1.x reaches end of support on 31 December 2025",
            "Customers on SDK 1.x are contacted by Customer Success in July",
        ],
    ),
    (
        "Looking ahead to Q4 2025",
        [
            "Insight 5.3 planned for November 2025",
            "Mobile app beta for iOS and Android",
            "Risk: two machine learning engineer roles are still open",
            "Risk: capacity in the Frankfurt cloud region",
        ],
    ),
]


def build_pdf() -> bytes:
    """The travel policy: four A4 pages, one ``TRAVEL_PAGES`` entry per page."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import cm
    from reportlab.platypus import ListFlowable, ListItem, PageBreak, Paragraph, SimpleDocTemplate, Spacer

    styles = getSampleStyleSheet()
    style = {"h1": styles["Title"], "h2": styles["Heading2"], "p": styles["BodyText"], "li": styles["BodyText"]}
    story: list = []
    for number, page in enumerate(TRAVEL_PAGES):
        if number:
            story.append(PageBreak())
        for kind, text in page:
            para = Paragraph(text, style[kind])
            story.append(ListFlowable([ListItem(para)], bulletType="bullet") if kind == "li" else para)
            story.append(Spacer(1, 0.15 * cm))

    def footer(canvas, doc) -> None:
        canvas.setFont("Helvetica", 8)
        canvas.drawString(2 * cm, 1.2 * cm, f"Brightwater Analytics - Global Travel Policy TP-2025 - page {doc.page}")

    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf,
        pagesize=A4,
        title="Global Travel Policy",
        author=AUTHOR,
        subject="TP-2025",
        creator="data/demo/make_demo.py",
        invariant=1,
    )
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return buf.getvalue()


def build_docx() -> bytes:
    """The data retention policy with Heading 1 / Heading 2 styles and a summary table."""
    import docx

    document = docx.Document()
    for level, text in RETENTION:
        if level:
            document.add_heading(text, level=level)
        else:
            document.add_paragraph(text)
    table = document.add_table(rows=0, cols=2)
    table.style = "Table Grid"
    for left, right in RETENTION_TABLE:
        cells = table.add_row().cells
        cells[0].text, cells[1].text = left, right
    _fix_core_properties(document.core_properties, "Data Retention and Deletion Policy")
    buf = io.BytesIO()
    document.save(buf)
    return normalize_zip(buf.getvalue())


def build_pptx() -> bytes:
    """The Q3 2025 roadmap: a title slide and seven title-and-content slides."""
    import pptx

    deck = pptx.Presentation()
    title_slide = deck.slides.add_slide(deck.slide_layouts[0])
    title_slide.shapes.title.text = ROADMAP_TITLE[0]
    title_slide.placeholders[1].text = ROADMAP_TITLE[1]
    for title, bullets in ROADMAP_SLIDES:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        frame = slide.placeholders[1].text_frame
        frame.text = bullets[0]
        for line in bullets[1:]:
            frame.add_paragraph().text = line
    _fix_core_properties(deck.core_properties, "Product Roadmap Q3 2025")
    buf = io.BytesIO()
    deck.save(buf)
    return normalize_zip(buf.getvalue())


def _fix_core_properties(props, title: str) -> None:
    props.title = title
    props.author = AUTHOR
    props.last_modified_by = AUTHOR
    props.created = FIXED_TIME
    props.modified = FIXED_TIME
    props.last_printed = FIXED_TIME
    props.revision = 1


def normalize_zip(data: bytes) -> bytes:
    """Rewrite a ZIP with every member stamped ``FIXED_TIME``, in the original order."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=FIXED_TIME.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


BUILDERS = {
    "travel_policy.pdf": build_pdf,
    "data_retention_policy.docx": build_docx,
    "product_roadmap_q3_2025.pptx": build_pptx,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    args = parser.parse_args(argv)
    stale = []
    for name, build in BUILDERS.items():
        data, target = build(), args.out / name
        if args.check:
            if not target.is_file() or target.read_bytes() != data:
                stale.append(name)
        else:
            target.write_bytes(data)
    if stale:
        sys.stderr.write(f"out of date: {', '.join(stale)} (run data/demo/make_demo.py)\n")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
