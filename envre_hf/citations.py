"""BibTeX of the works envre-hf builds on, for dataset, model and metric cards (one copy each)."""

ENV_CITATION = """\
@inproceedings{meng-etal-2024-robustness,
    title = "On the Robustness of Document-Level Relation Extraction Models to Entity Name Variations",
    author = "Meng, Shiao and Hu, Xuming and Liu, Aiwei and Ma, Fukun and Yang, Yawen and Li, Shuang and Wen, Lijie",
    booktitle = "Findings of the Association for Computational Linguistics: ACL 2024",
    year = "2024",
}"""
DOCRED_CITATION = """\
@inproceedings{yao-etal-2019-docred,
    title = "{D}oc{RED}: A Large-Scale Document-Level Relation Extraction Dataset",
    author = "Yao, Yuan and Ye, Deming and Li, Peng and Han, Xu and Lin, Yankai and Liu, Zhenghao and Liu, Zhiyuan and Huang, Lixin and Zhou, Jie and Sun, Maosong",
    booktitle = "Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics",
    year = "2019",
}"""
REDOCRED_CITATION = """\
@inproceedings{tan-etal-2022-revisiting,
    title = "Revisiting {D}oc{RED} - Addressing the False Negative Problem in Relation Extraction",
    author = "Tan, Qingyu and Xu, Lu and Bing, Lidong and Ng, Hwee Tou and Aljunied, Sharifah Mahani",
    booktitle = "Proceedings of the 2022 Conference on Empirical Methods in Natural Language Processing",
    year = "2022",
}"""
